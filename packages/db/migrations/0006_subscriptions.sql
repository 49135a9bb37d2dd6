-- A user's subscription: `plan` says which tier, `subscription_status` whether it is paid up.
alter table users add column subscription_status text not null default 'none';
