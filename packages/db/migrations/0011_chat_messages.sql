-- Chat history of POST /api/chat (spec §4.4): each turn stores the user's message and the agent's reply.
-- User-owned like every table of 0004. `agent_id` is null for turns on the shared platform gateway; it is not a
-- foreign key, so the history outlives a deleted agent (as the usage ledger does). `seq` orders two rows written in
-- one millisecond (a user message and its reply) exactly and is the `before` cursor of the history.
create table chat_messages (
  id text primary key,
  seq bigint generated always as identity,
  user_id text not null references users (id) on delete cascade,
  agent_id text,
  session_key text not null,
  role text not null check (role in ('user', 'assistant')),
  content text not null,
  model text,
  prompt_tokens integer not null default 0,
  completion_tokens integer not null default 0,
  created_at timestamptz not null default now()
);
create index chat_messages_user_agent_created_idx on chat_messages (user_id, agent_id, created_at);
create index chat_messages_user_seq_idx on chat_messages (user_id, seq desc);
alter table chat_messages enable row level security;
create policy chat_messages_owner on chat_messages using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, delete on chat_messages to app_user;
