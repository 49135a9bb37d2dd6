-- The AI model each user chose for `POST /api/ai/chat` (`POST /api/ai/models/select`): one row per
-- user, user-owned like every other table. No foreign key to users: the backend's database may not
-- hold the web's user rows (user ids arrive in the signed user context).
create table ai_model_selections (
  user_id text primary key,
  provider text not null,
  model text not null,
  updated_at timestamptz not null default now()
);
alter table ai_model_selections enable row level security;
create policy ai_model_selections_owner on ai_model_selections using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on ai_model_selections to app_user;
