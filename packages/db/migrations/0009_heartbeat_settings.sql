-- Heartbeat settings kept by the web service when the agent's gateway cannot take them (spec §4.10: "Writes a
-- gateway cron job first, else saves to the database"). One row per user and agent, user-owned like 0004's tables.
create table heartbeat_settings (
  user_id text not null references users (id) on delete cascade,
  agent_id text not null references agents (id) on delete cascade,
  enabled boolean not null default true,
  frequency text not null default '30m' check (frequency in ('30m', '1h', '2h', '3h', '6h', '12h')),
  updated_at timestamptz not null default now(),
  primary key (user_id, agent_id)
);
alter table heartbeat_settings enable row level security;
create policy heartbeat_settings_owner on heartbeat_settings using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on heartbeat_settings to app_user;
