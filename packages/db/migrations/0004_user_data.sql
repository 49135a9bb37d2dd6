-- User data areas: agent configuration and its backups, workflows, the bridge bus,
-- trading keys, the usage ledger, agents (as the web knows them), memory, files,
-- skills and scheduled tasks. Every user-owned table follows the pattern of 0001.

create table agent_configs (
  user_id text primary key references users (id) on delete cascade,
  config jsonb not null,
  updated_at timestamptz not null default now()
);
alter table agent_configs enable row level security;
create policy agent_configs_owner on agent_configs using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agent_configs to app_user;

-- `seq` orders backups exactly, even two made within one millisecond.
create table config_backups (
  id text primary key,
  seq bigint generated always as identity,
  user_id text not null references users (id) on delete cascade,
  config jsonb not null,
  created_at timestamptz not null default now()
);
create index config_backups_user_seq_idx on config_backups (user_id, seq desc);
alter table config_backups enable row level security;
create policy config_backups_owner on config_backups using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on config_backups to app_user;

create table workflows (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  name text not null,
  description text,
  enabled boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index workflows_user_updated_idx on workflows (user_id, updated_at desc);
alter table workflows enable row level security;
create policy workflows_owner on workflows using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on workflows to app_user;

create table workflow_nodes (
  id text primary key,
  workflow_id text not null references workflows (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  type text not null check (type in ('trigger', 'action', 'condition', 'output')),
  config text not null default '{}',
  position text not null default '{"x":0,"y":0}',
  seq integer not null,
  created_at timestamptz not null default now()
);
create index workflow_nodes_workflow_idx on workflow_nodes (workflow_id, seq);
alter table workflow_nodes enable row level security;
create policy workflow_nodes_owner on workflow_nodes using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on workflow_nodes to app_user;

-- The bridge bus is shared between operators (guarded by X-Bridge-Secret), not user-owned.
create table bridge_messages (
  id text primary key,
  sender text not null,
  channel text not null,
  content text not null,
  priority text not null default 'normal',
  created_at timestamptz not null default now()
);
create index bridge_messages_channel_created_idx on bridge_messages (channel, created_at, id);
create table bridge_reads (
  message_id text not null references bridge_messages (id) on delete cascade,
  reader text not null,
  read_at timestamptz not null default now(),
  primary key (reader, message_id)
);

-- The personal trading-service key, AES-256-GCM sealed; never returned.
create table trading_keys (
  user_id text primary key references users (id) on delete cascade,
  key_enc text not null,
  updated_at timestamptz not null default now()
);
alter table trading_keys enable row level security;
create policy trading_keys_owner on trading_keys using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on trading_keys to app_user;

-- Agents as the web service knows them (provisioning records; the backend runs them).
create table agents (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  name text not null,
  model text,
  status text not null default 'provisioning',
  plan text,
  subdomain text,
  url text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agents_user_idx on agents (user_id, created_at desc);
alter table agents enable row level security;
create policy agents_owner on agents using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agents to app_user;

-- The usage ledger: every LLM, plugin and agent call writes one row.
create table usage_events (
  id text primary key,
  user_id text not null,
  agent_id text,
  agent_name text,
  kind text not null,
  model text,
  prompt_tokens integer not null default 0,
  completion_tokens integer not null default 0,
  total_tokens integer not null default 0,
  cost_usd numeric(14, 6) not null default 0,
  created_at timestamptz not null default now()
);
create index usage_events_user_created_idx on usage_events (user_id, created_at);
alter table usage_events enable row level security;
create policy usage_events_owner on usage_events using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert on usage_events to app_user;

create table memories (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  agent_id text,
  content text not null,
  tags jsonb not null default '[]'::jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index memories_user_agent_idx on memories (user_id, agent_id, created_at desc);
alter table memories enable row level security;
create policy memories_owner on memories using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on memories to app_user;

create table agent_files (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  agent_id text not null,
  path text not null,
  content text not null,
  size integer not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (user_id, agent_id, path)
);
alter table agent_files enable row level security;
create policy agent_files_owner on agent_files using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agent_files to app_user;

create table skills (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  agent_id text,
  name text not null,
  description text,
  enabled boolean not null default true,
  config jsonb not null default '{}'::jsonb,
  installed_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index skills_user_agent_name_key on skills (user_id, coalesce(agent_id, ''), name);
alter table skills enable row level security;
create policy skills_owner on skills using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on skills to app_user;

create table scheduled_tasks (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  agent_id text,
  name text not null,
  schedule text not null,
  prompt text not null,
  enabled boolean not null default true,
  last_run_at timestamptz,
  next_run_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index scheduled_tasks_user_agent_idx on scheduled_tasks (user_id, agent_id);
alter table scheduled_tasks enable row level security;
create policy scheduled_tasks_owner on scheduled_tasks using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on scheduled_tasks to app_user;
