-- Hosting webhooks, invites (web) and installations, swarms (backend).
--
-- Both services run every migration; each keeps to its own tables (the web's stay empty on
-- the backend's embedded database and the other way round).

-- ---------------------------------------------------------------------------------------------
-- Email provider events (POST /api/webhooks/email). Operator data: no grant to app_user.
-- `id` is the delivery's message id (`svix-id` / `webhook-id`), which the provider keeps across
-- retries, so a redelivered event is stored once.
create table email_events (
  id text primary key,
  type text not null check (type in ('inbound', 'sent', 'delivered', 'bounced', 'opened', 'clicked', 'complained')),
  -- The provider's id of the message the event is about.
  email_id text,
  from_address text,
  to_addresses jsonb not null default '[]'::jsonb,
  subject text,
  -- Inbound mail only, when the provider includes the body.
  text_body text,
  html_body text,
  occurred_at timestamptz not null,
  received_at timestamptz not null default now(),
  payload jsonb not null
);
create index email_events_email_id_idx on email_events (email_id);
create index email_events_type_received_idx on email_events (type, received_at desc);

-- Addresses the mailer no longer writes to: a hard bounce or a spam complaint. Lower-case.
create table email_suppressions (
  address text primary key,
  reason text not null check (reason in ('bounced', 'complained')),
  event_id text references email_events (id) on delete set null,
  created_at timestamptz not null default now()
);

-- ---------------------------------------------------------------------------------------------
-- Hosting provider events (POST /api/webhooks/hosting-status), kept for polling with GET.
-- `seq` is the polling cursor; `id` the delivery's message id (de-duplication).
create table hosting_events (
  seq bigint generated always as identity unique,
  id text primary key,
  type text not null,
  category text not null check (category in ('deployment', 'platform')),
  service_id text,
  service_name text,
  status text,
  occurred_at timestamptz not null,
  received_at timestamptz not null default now(),
  payload jsonb not null
);
create index hosting_events_service_idx on hosting_events (service_id, category, seq desc);

-- ---------------------------------------------------------------------------------------------
-- Invites (POST /api/invite, /api/invites/verify, /api/admin/invites). `user_id` is who invited;
-- only the SHA-256 of the code is stored (the code is shown once and mailed).
create table invites (
  id text primary key,
  code_hash text not null unique,
  email text not null,
  user_id text not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz,
  revoked_by text references users (id) on delete set null,
  accepted_at timestamptz,
  accepted_user_id text references users (id) on delete set null
);
create index invites_user_created_idx on invites (user_id, created_at desc);
create index invites_email_idx on invites (lower(email));
alter table invites enable row level security;
create policy invites_owner on invites using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update on invites to app_user;

-- An invite is accepted when an account with its address is created, whichever way it signs up
-- (password, identity provider, wallet): one trigger instead of a step in every sign-up path.
create function invites_accept_on_signup() returns trigger
  language plpgsql security definer set search_path = public
  as $$
begin
  update invites
     set accepted_at = now(), accepted_user_id = new.id
   where lower(email) = lower(new.email)
     and accepted_at is null and revoked_at is null and expires_at > now();
  return new;
end $$;
create trigger users_accept_invites after insert on users for each row execute function invites_accept_on_signup();

-- ---------------------------------------------------------------------------------------------
-- Backend: installations (POST /api/register-home, /api/register-link, GET /api/installations).
-- A self-hosted home instance, identified by its Ed25519 key; `linked` once it signed our challenge.
-- No foreign key to users: the backend's database may not hold the web's user rows.
create table installations (
  id text primary key,
  user_id text not null,
  name text not null,
  url text,
  -- base64url of the raw 32-byte Ed25519 public key, and its SHA-256 hex (the OpenClaw device id).
  public_key text not null,
  device_id text not null,
  version text,
  status text not null default 'pending' check (status in ('pending', 'linked')),
  challenge text,
  challenge_expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  linked_at timestamptz,
  last_seen_at timestamptz,
  unique (user_id, device_id)
);
-- A key proven by one account cannot be linked to another.
create unique index installations_linked_device_key on installations (device_id) where status = 'linked';
create index installations_user_created_idx on installations (user_id, created_at desc);
alter table installations enable row level security;
create policy installations_owner on installations using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on installations to app_user;

-- Backend: swarms (GET, POST /api/swarms): named groups of a user's agents.
create table swarms (
  id text primary key,
  user_id text not null,
  name text not null,
  description text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index swarms_user_name_key on swarms (user_id, lower(name));
alter table swarms enable row level security;
create policy swarms_owner on swarms using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on swarms to app_user;

create table swarm_agents (
  swarm_id text not null references swarms (id) on delete cascade,
  agent_id text not null references agent_deployments (id) on delete cascade,
  user_id text not null,
  added_at timestamptz not null default now(),
  primary key (swarm_id, agent_id)
);
create index swarm_agents_agent_idx on swarm_agents (agent_id);
alter table swarm_agents enable row level security;
create policy swarm_agents_owner on swarm_agents using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on swarm_agents to app_user;
