-- Foundation: the row-level-security role and helper, users, sessions, audit log.
--
-- The pattern every user-owned table follows:
--   1. a `user_id text not null` column (indexed),
--   2. `alter table … enable row level security`,
--   3. one policy `<table>_owner` using and checking `user_id = app_current_user_id()`,
--   4. `grant select, insert, update, delete on <table> to app_user`.
-- Queries that run for a user go through withUser(), which switches to the
-- non-owner role `app_user` and sets `app.user_id` for that transaction only.

do $$ begin
  create role app_user nologin;
exception when duplicate_object or unique_violation then null;
end $$;

-- The connecting role must be able to SET ROLE app_user (superusers already can).
do $$ begin
  execute format('grant app_user to %I', current_user);
exception when others then null;
end $$;

grant usage on schema public to app_user;

create function app_current_user_id() returns text
  language sql stable
  as $$ select nullif(current_setting('app.user_id', true), '') $$;

create table users (
  id text primary key,
  email text not null,
  name text not null,
  password_hash text,
  is_admin boolean not null default false,
  email_verified_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_lower_key on users (lower(email));

alter table users enable row level security;
create policy users_owner on users
  using (id = app_current_user_id())
  with check (id = app_current_user_id());
grant select, insert, update, delete on users to app_user;

-- Only the SHA-256 of a session token is stored; the token lives in the cookie.
create table sessions (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  token_hash text not null unique,
  expires_at timestamptz not null,
  ip text,
  user_agent text,
  created_at timestamptz not null default now()
);
create index sessions_user_id_idx on sessions (user_id);
create index sessions_expires_at_idx on sessions (expires_at);

alter table sessions enable row level security;
create policy sessions_owner on sessions
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert, update, delete on sessions to app_user;

create table audit_log (
  id text primary key,
  user_id text references users (id) on delete set null,
  action text not null,
  target text,
  metadata jsonb not null default '{}'::jsonb,
  ip text,
  created_at timestamptz not null default now()
);
create index audit_log_user_created_idx on audit_log (user_id, created_at desc);

alter table audit_log enable row level security;
create policy audit_log_owner on audit_log
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert on audit_log to app_user;
