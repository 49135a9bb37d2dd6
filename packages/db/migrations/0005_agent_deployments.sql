-- The backend's record of each agent it runs (the agent host keeps the process
-- state and sealed secrets on its side). User-owned, like every other table.

create table agent_deployments (
  id text primary key,
  user_id text not null,
  user_email text,
  name text not null,
  subdomain text not null unique,
  status text not null default 'pending',
  plan text not null,
  ai_provider text not null default 'openrouter',
  config jsonb not null default '{}'::jsonb,
  version text,
  verification jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index agent_deployments_user_idx on agent_deployments (user_id, created_at desc);
alter table agent_deployments enable row level security;
create policy agent_deployments_owner on agent_deployments using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agent_deployments to app_user;
