-- Workflow runs (issue #19): each `POST /api/workflows/:id/run` is recorded with its steps and result, so the editor
-- can show the last runs. A run belongs to its workflow's owner, and goes with the workflow or the user.
create table workflow_runs (
  id text primary key,
  workflow_id text not null references workflows (id) on delete cascade,
  user_id text not null references users (id) on delete cascade,
  status text not null check (status in ('running', 'succeeded', 'failed')),
  -- What the run was started with (the trigger's input).
  input text not null,
  -- The output steps' result; null while running or when no output was reached.
  result text,
  -- Why the run failed, in words; null unless it did.
  error text,
  -- The steps in the order they ran: [{ key, type, label, status, input, output, error, startedAt, finishedAt }].
  steps jsonb not null default '[]',
  started_at timestamptz not null default now(),
  finished_at timestamptz
);
create index workflow_runs_workflow_started_idx on workflow_runs (workflow_id, started_at desc);
alter table workflow_runs enable row level security;
create policy workflow_runs_owner on workflow_runs using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update, delete on workflow_runs to app_user;
