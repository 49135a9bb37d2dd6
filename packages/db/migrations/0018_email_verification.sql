-- Email verification: an address counts (administrator rights from ADMIN_EMAILS, invites, the
-- backend's user context) only once a link mailed to it was followed. A token proves one address:
-- the account's own after registration, or the one an email change asks for; the account keeps its
-- current address until the change's link is followed.
create table email_verification_tokens (
  token_hash text primary key,
  user_id text not null references users (id) on delete cascade,
  -- Lower-case, as users.email is stored.
  email text not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index email_verification_tokens_user_id_idx on email_verification_tokens (user_id, created_at desc);

alter table email_verification_tokens enable row level security;
create policy email_verification_tokens_owner on email_verification_tokens
  using (user_id = app_current_user_id())
  with check (user_id = app_current_user_id());
grant select, insert, update, delete on email_verification_tokens to app_user;
