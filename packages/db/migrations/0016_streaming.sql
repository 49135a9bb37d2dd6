-- Live streaming and video generation (spec §2.11, §3.4, §4.16, §6).
--
-- live_streams: every stream created through POST /api/radio/streams. The id is the streaming provider's live-stream
-- id, so the provider's list, its webhooks and our rows meet on it. The stream key is never stored (the provider
-- keeps it; it is a publishing credential). A stream belongs to a gate-token wallet, not to an account, so there is no
-- row-level security and no grant to app_user: only the owner connection reads and writes these tables.
create table live_streams (
  id text primary key,
  name text not null,
  -- Lower-case address of the smart-contract wallet that passed the gate.
  wallet text not null,
  playback_id text,
  status text not null default 'created' check (status in ('created', 'active', 'idle', 'disabled')),
  -- When the provider last reported the stream active (video.live_stream.active); cleared when it goes idle.
  active_since timestamptz,
  last_event_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index live_streams_wallet_idx on live_streams (wallet, created_at desc);

-- One decision per recorded asset (video.asset.ready): `archive` (1080p or higher and longer than 15 minutes: kept at
-- the provider) or `delete` (queued; the deletion worker calls the provider's DELETE asset once `delete_after` has
-- passed). The first decision for an asset stands; a redelivered event changes nothing.
create table stream_assets (
  id text primary key,
  live_stream_id text,
  playback_id text,
  duration_seconds double precision,
  -- The short side of the largest video rendition in pixels (1080 for 1920x1080 and for 1080x1920); 0 audio-only;
  -- null when the provider said nothing usable.
  resolution integer,
  decision text not null check (decision in ('archive', 'delete')),
  reason text not null,
  status text not null check (status in ('archived', 'pending_deletion', 'deleted', 'deletion_failed')),
  delete_after timestamptz,
  deletion_attempts integer not null default 0,
  last_error text,
  deleted_at timestamptz,
  decided_at timestamptz not null default now()
);
create index stream_assets_due_idx on stream_assets (delete_after) where status = 'pending_deletion';
create index stream_assets_live_stream_idx on stream_assets (live_stream_id);

-- Streaming-provider webhook events already handled: the event id is the key, stored in the same transaction as the
-- event's effects, so a redelivered or replayed event changes nothing.
create table stream_webhook_events (
  id text primary key,
  type text not null,
  received_at timestamptz not null default now()
);

-- POST /api/generate-video jobs: recorded when the render starts, completed with the blob-storage object and URL.
create table video_jobs (
  id text primary key,
  user_id text not null references users (id) on delete cascade,
  type text not null check (type in ('demo', 'marketing', 'screenshot', 'tutorial')),
  input jsonb not null,
  status text not null default 'rendering' check (status in ('rendering', 'completed', 'failed', 'timed_out')),
  render_id text,
  object_key text,
  url text,
  bytes bigint,
  content_type text,
  error text,
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index video_jobs_user_created_idx on video_jobs (user_id, created_at desc);
alter table video_jobs enable row level security;
create policy video_jobs_owner on video_jobs using (user_id = app_current_user_id()) with check (user_id = app_current_user_id());
grant select, insert, update on video_jobs to app_user;
