-- Invites are accepted by a VERIFIED address (issue #16): migration 0017 accepted an invite as soon as an account
-- with its address was created, so registering someone else's invited address used their invite up. Now the invite
-- is accepted when an account's address counts: created verified (identity provider, wallet), or verified later
-- (the mailed link), or changed to it through a verified email change.
drop trigger users_accept_invites on users;
drop function invites_accept_on_signup();

create function invites_accept_on_verified_address() returns trigger
  language plpgsql security definer set search_path = public
  as $$
begin
  if new.email_verified_at is null then
    return new;
  end if;
  if tg_op = 'UPDATE' and old.email_verified_at is not null and lower(old.email) = lower(new.email) then
    return new;
  end if;
  update invites
     set accepted_at = now(), accepted_user_id = new.id
   where lower(email) = lower(new.email)
     and accepted_at is null and revoked_at is null and expires_at > now();
  return new;
end $$;
create trigger users_accept_invites after insert or update of email, email_verified_at on users
  for each row execute function invites_accept_on_verified_address();
