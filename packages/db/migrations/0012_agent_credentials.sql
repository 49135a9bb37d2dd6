-- Credentials a user gives their agents (`POST /api/agent` action `set-credential`): messaging channel tokens
-- (`telegram`, `discord`, `whatsapp`), the agent's own LLM API key (`llm`), and secrets for the user's skills (any other
-- name). The value is AES-256-GCM sealed with the web's encryption key, its associated data binding it to the user,
-- the scope and the name, so a sealed value copied to another row does not open; it is never returned.
-- `agent_id` null is the user-wide scope; an agent's own credentials go with the agent (a secret must not outlive it).
-- User-owned like every table of 0004.
create table agent_credentials (
  id bigint generated always as identity primary key,
  user_id text not null references users (id) on delete cascade,
  agent_id text references agents (id) on delete cascade,
  name text not null,
  kind text not null check (kind in ('channel', 'llm', 'skill')),
  value_enc text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index agent_credentials_user_agent_name_key on agent_credentials (user_id, coalesce(agent_id, ''), name);
alter table agent_credentials enable row level security;
create policy agent_credentials_owner on agent_credentials using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agent_credentials to app_user;
