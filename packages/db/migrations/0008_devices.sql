-- Devices paired with a user's agent gateway (spec §2.8, §3.1, §4.12). The gateway holds the live pairing state
-- (pending requests expire after 5 minutes, and a re-created gateway forgets everything); this table is the platform's
-- record of each device and of the owner's decisions, so `denied` and `revoked` stay final and the history survives
-- gateway restarts and outages. `request_id` is the gateway's current pending request for a `pending` device; null when
-- that request is gone (expired or resolved elsewhere), and then the device is not listed until it asks again.
create table devices (
  user_id text not null references users (id) on delete cascade,
  agent_id text not null references agents (id) on delete cascade,
  -- The gateway's device id: sha256 hex of the device's Ed25519 public key.
  device_id text not null,
  name text not null default '',
  ip text not null default '',
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  status text not null default 'pending' check (status in ('pending', 'approved', 'denied', 'revoked')),
  request_id text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (user_id, agent_id, device_id)
);
alter table devices enable row level security;
create policy devices_owner on devices using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on devices to app_user;
