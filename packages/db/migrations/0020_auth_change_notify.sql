-- Sign-in facts change → every web replica hears it (issue #18). The web keeps who a session cookie or API key
-- belongs to for a few seconds; these triggers announce, on channel `aop_auth_change` with the user id as payload,
-- every change that could make such a cached answer wrong: a session ended or a key revoked (deleted), an account
-- disabled, renamed, re-addressed, verified or made administrator (whoever wrote it: a route, a background job, the
-- operator CLI). A notification is sent at commit, so a rolled-back change announces nothing.
create function notify_auth_change() returns trigger
  language plpgsql
  as $$
begin
  -- The trigger's argument names the column holding the user id (`id` on users, `user_id` elsewhere).
  perform pg_notify('aop_auth_change', to_jsonb(old) ->> tg_argv[0]);
  return null;
end
$$;

create trigger users_auth_change
  after update of name, email, email_verified_at, is_admin, disabled_at or delete on users
  for each row execute function notify_auth_change('id');
create trigger sessions_auth_change
  after update of user_id, token_hash, expires_at or delete on sessions
  for each row execute function notify_auth_change('user_id');
create trigger api_keys_auth_change
  after update of user_id, key_hash or delete on api_keys
  for each row execute function notify_auth_change('user_id');
