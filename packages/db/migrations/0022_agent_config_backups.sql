-- Per-agent configuration backups (issue #19, "Configuration is per agent"). Each agent's configuration is the
-- backend's `agent_deployments.config`, which its host writes into the agent's openclaw.json; every save or restore
-- through `PUT /api/agents/:id/config` keeps the configuration it replaces here, the 10 newest per agent (the rule
-- spec §4.2 and §8 give the account-level `/api/config` backups in `config_backups`). They live beside the
-- configuration they back up, so the backup and the write are one transaction, and go with the agent.
-- `seq` orders backups exactly, even two made within one millisecond.
create table agent_config_backups (
  id text primary key,
  seq bigint generated always as identity,
  agent_id text not null references agent_deployments (id) on delete cascade,
  user_id text not null,
  config jsonb not null,
  created_at timestamptz not null default now()
);
create index agent_config_backups_agent_seq_idx on agent_config_backups (agent_id, seq desc);
alter table agent_config_backups enable row level security;
create policy agent_config_backups_owner on agent_config_backups using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on agent_config_backups to app_user;
