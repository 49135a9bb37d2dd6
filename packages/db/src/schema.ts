import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Timestamps are written as Date or ISO strings and read as Date. */
type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string | T | undefined, string | T>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface UsersTable {
  id: string;
  email: string;
  name: string;
  password_hash: string | null;
  is_admin: Generated<boolean>;
  email_verified_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Upper-case; matched case-insensitively. */
  referral_code: string | null;
  referred_by: string | null;
  /** Referral credits. */
  credits: Generated<number>;
  plan: Generated<string>;
  /** `none`, `active`, `past_due`, `canceled`. */
  subscription_status: Generated<string>;
  runtime_url: string | null;
  runtime_instance_id: string | null;
  /** Notification preferences as the user set them. */
  notifications: Json<Record<string, unknown>>;
  /** Lower-case address of the smart-contract wallet that signs in. */
  wallet_address: string | null;
  /** Set by account protection: the account cannot sign in and its sessions stop working. */
  disabled_at: NullableTimestamp;
  credential_change_flagged_at: NullableTimestamp;
  /** The payment provider's customer (migration 0014). */
  stripe_customer_id: string | null;
  /** The provider subscription that pays for `plan`; events about other subscriptions change nothing. */
  stripe_subscription_id: string | null;
  /** Bring your own key: the user's agents use the user's own LLM key. */
  byok: Generated<boolean>;
  /** Storage bought on top of the plan (`POST /api/payments/card/storage-upgrade`). */
  extra_storage_gb: Generated<number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  key_prefix: string;
  key_hash: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
}

/** A mailed link that proves `email` belongs to `user_id` (migration 0018). */
export interface EmailVerificationTokensTable {
  token_hash: string;
  user_id: string;
  /** The address the link proves: the account's own, or the one an email change asks for. */
  email: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface PasswordResetTokensTable {
  token_hash: string;
  user_id: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  used_at: NullableTimestamp;
  created_at: Timestamp;
}

export interface EmailOutboxTable {
  id: string;
  user_id: string | null;
  kind: string;
  to_address: string;
  subject: string;
  body_text: string;
  created_at: Timestamp;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
}

export interface AuditLogTable {
  id: string;
  user_id: string | null;
  action: string;
  target: string | null;
  metadata: Json<Record<string, unknown>>;
  ip: string | null;
  created_at: Timestamp;
}

export interface OauthAccountsTable {
  id: string;
  user_id: string;
  /** `idp` or `codehost`. */
  provider: string;
  provider_account_id: string;
  email: string | null;
  access_token_enc: string | null;
  refresh_token_enc: string | null;
  id_token_enc: string | null;
  expires_at: NullableTimestamp;
  scope: string | null;
  metadata: Json<Record<string, unknown>>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SecurityEventsTable {
  jti: string;
  /** `risc` (validated receiver) or `legacy` (email-matched receiver). */
  source: string;
  issuer: string | null;
  subject: string | null;
  email: string | null;
  event_types: Json<string[]>;
  payload: Json<Record<string, unknown>>;
  received_at: Timestamp;
  processed_at: NullableTimestamp;
  attempts: Generated<number>;
  last_error: string | null;
}

export interface AgentConfigsTable {
  user_id: string;
  config: Json<Record<string, unknown>>;
  updated_at: Timestamp;
}

export interface ConfigBackupsTable {
  id: string;
  seq: Generated<number>;
  user_id: string;
  config: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

/** Issue #19: one agent's configuration as it was before a save or restore (`agent_deployments.config`). */
export interface AgentConfigBackupsTable {
  id: string;
  seq: Generated<number>;
  agent_id: string;
  user_id: string;
  config: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface WorkflowsTable {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  enabled: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface WorkflowNodesTable {
  id: string;
  workflow_id: string;
  user_id: string;
  type: 'trigger' | 'action' | 'condition' | 'output';
  /** JSON-encoded text, as the spec returns it. */
  config: string;
  /** JSON-encoded `{x, y}` text. */
  position: string;
  seq: number;
  created_at: Timestamp;
}

/** One step of a workflow run, as `workflow_runs.steps` keeps it. */
export interface WorkflowRunStep {
  key: string;
  type: 'trigger' | 'action' | 'condition' | 'output';
  label: string;
  status: 'succeeded' | 'failed' | 'stopped';
  input: string;
  output: string | null;
  error: string | null;
  startedAt: string;
  finishedAt: string;
}

export interface WorkflowRunsTable {
  id: string;
  workflow_id: string;
  user_id: string;
  status: 'running' | 'succeeded' | 'failed';
  input: string;
  result: string | null;
  error: string | null;
  steps: Json<WorkflowRunStep[]>;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
}

export interface BridgeMessagesTable {
  id: string;
  sender: string;
  channel: string;
  content: string;
  priority: string;
  created_at: Timestamp;
}

export interface BridgeReadsTable {
  message_id: string;
  reader: string;
  read_at: Timestamp;
}

export interface TradingKeysTable {
  user_id: string;
  key_enc: string;
  updated_at: Timestamp;
}

export interface AgentsTable {
  id: string;
  user_id: string;
  name: string;
  model: string | null;
  status: Generated<string>;
  plan: string | null;
  subdomain: string | null;
  url: string | null;
  /** Direct deployments only (migration 0007): the gateway token sealed with the web's key, the provider's ids. */
  gateway_token_sealed: string | null;
  hosting_service_id: string | null;
  hosting_deployment_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface UsageEventsTable {
  id: string;
  user_id: string;
  agent_id: string | null;
  agent_name: string | null;
  /** `llm`, `plugin`, `agent`, `demo` … */
  kind: string;
  model: string | null;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  total_tokens: Generated<number>;
  /** numeric(14,6), read as a string. */
  cost_usd: ColumnType<string, string | number | undefined, string | number>;
  created_at: Timestamp;
}

export interface MemoriesTable {
  id: string;
  user_id: string;
  agent_id: string | null;
  content: string;
  tags: Json<string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AgentFilesTable {
  id: string;
  user_id: string;
  agent_id: string;
  path: string;
  content: string;
  size: number;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SkillsTable {
  id: string;
  user_id: string;
  agent_id: string | null;
  name: string;
  description: string | null;
  enabled: Generated<boolean>;
  config: Json<Record<string, unknown>>;
  installed_at: Timestamp;
  updated_at: Timestamp;
}

export interface ScheduledTasksTable {
  id: string;
  user_id: string;
  agent_id: string | null;
  name: string;
  schedule: string;
  prompt: string;
  enabled: Generated<boolean>;
  last_run_at: NullableTimestamp;
  next_run_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface AgentDeploymentsTable {
  id: string;
  user_id: string;
  user_email: string | null;
  name: string;
  subdomain: string;
  /** `pending`, `deploying`, `active`, `stopped`, `error`. */
  status: Generated<string>;
  plan: string;
  ai_provider: Generated<string>;
  config: Json<Record<string, unknown>>;
  version: string | null;
  verification: Json<Record<string, unknown> | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** The model a user chose for backend AI chat (`POST /api/ai/models/select`). */
export interface AiModelSelectionsTable {
  user_id: string;
  /** `openrouter`, `gemini`, `groq`, `anthropic`, `openai` (aliases normalized). */
  provider: string;
  model: string;
  updated_at: Timestamp;
}

/** Heartbeat settings saved when the gateway could not take them (spec §4.10, migration 0009). */
export interface HeartbeatSettingsTable {
  user_id: string;
  agent_id: string;
  enabled: Generated<boolean>;
  /** `30m`, `1h`, `2h`, `3h`, `6h` or `12h`. */
  frequency: Generated<string>;
  updated_at: Timestamp;
  /** Until when one caller is putting it on the agent's gateway (migration 0024); null: nobody. */
  claimed_until: NullableTimestamp;
}

/** `POST /api/chat` turns (migration 0011): the user's message and the agent's reply, one row each. */
export interface ChatMessagesTable {
  id: string;
  /** Insertion order (the history's `before` cursor is a message id, compared by its `seq`). */
  seq: Generated<number>;
  user_id: string;
  /** Null for turns on the shared platform gateway. */
  agent_id: string | null;
  /** The key the user chose (`main` by default), not the gateway's scoped form. */
  session_key: string;
  role: 'user' | 'assistant';
  content: string;
  model: string | null;
  prompt_tokens: Generated<number>;
  completion_tokens: Generated<number>;
  created_at: Timestamp;
}

/**
 * Credentials given to agents (migration 0012, `POST /api/agent` `set-credential`): `value_enc` is AES-256-GCM sealed
 * (associated data: user, scope, name) and never leaves the web service in clear except towards the agent's own host.
 */
export interface AgentCredentialsTable {
  id: Generated<number>;
  user_id: string;
  /** Null: the user-wide scope. */
  agent_id: string | null;
  name: string;
  kind: 'channel' | 'llm' | 'skill';
  value_enc: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Devices paired with a user's agent gateway, mirrored from `device.pair.list` (spec §2.8, §3.1; migration 0008). */
export interface DevicesTable {
  user_id: string;
  agent_id: string;
  /** The gateway's device id (sha256 hex of its Ed25519 public key). */
  device_id: string;
  name: string;
  ip: string;
  first_seen: Timestamp;
  last_seen: Timestamp;
  status: 'pending' | 'approved' | 'denied' | 'revoked';
  /** The gateway's pending request for a `pending` device; null once that request is gone. */
  request_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Checkout Sessions we created (migration 0014); `open` → `complete` happens once. */
export interface BillingCheckoutsTable {
  session_id: string;
  user_id: string;
  kind: 'plan' | 'credits' | 'storage';
  plan: string | null;
  credits: Generated<number>;
  storage_gb: Generated<number>;
  /** Minor units (pence). */
  amount_total: number | null;
  currency: string | null;
  status: Generated<'open' | 'complete' | 'expired'>;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
}

/** Payment-provider webhook events already handled, by event id (migration 0014). */
export interface BillingEventsTable {
  id: string;
  type: string;
  received_at: Timestamp;
}

/** Wallets linked to an account (migration 0014); `address` lower-case, unique across accounts. */
export interface WalletsTable {
  id: Generated<string>;
  user_id: string;
  address: string;
  kind: 'external' | 'custodial';
  /** `eoa`, `contract`, `counterfactual`, or null when no chain was asked. */
  signer: string | null;
  created_at: Timestamp;
}

/** Numeric money and token columns are read as exact decimal strings. */
type Numeric = ColumnType<string, string | number | bigint, string | number | bigint>;
type NullableNumeric = ColumnType<string | null, string | number | bigint | null | undefined, string | number | bigint | null>;

/** MPP challenges issued in 402 answers (migration 0013); consumed once by a verified credential. */
export interface PaymentChallengesTable {
  nonce: string;
  plugin: string;
  amount_usd: Numeric;
  /** In the token's smallest unit. */
  amount_atomic: Numeric;
  /** Token contract, lower-case. */
  currency: string;
  recipient: string;
  chain_id: number;
  issued_at: Timestamp;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  tx_hash: string | null;
}

/** On-chain transactions accepted as payments (migration 0013); the hash is the replay guard. */
export interface PaymentTransactionsTable {
  tx_hash: string;
  purpose: 'mpp' | 'session_deposit';
  challenge_nonce: string | null;
  session_id: string | null;
  payer: string;
  amount_atomic: Numeric;
  block_number: ColumnType<number, number | bigint, number | bigint>;
  created_at: Timestamp;
}

/** Pre-funded payment sessions (migration 0013); USD amounts as exact decimal strings. */
export interface PaymentSessionsTable {
  id: string;
  user_address: string;
  deposit: Numeric;
  spent: ColumnType<string, string | number | undefined, string | number>;
  status: ColumnType<'active' | 'settling' | 'closed', 'active' | 'settling' | 'closed' | undefined, 'active' | 'settling' | 'closed'>;
  deposit_tx_hash: string;
  /** Owed back to the wallet once closed (deposit less spent). */
  returned: NullableNumeric;
  /** The operator's payout of `returned`, recorded by hand. */
  refund_tx_hash: string | null;
  created_at: Timestamp;
  last_settled_at: Timestamp;
  closed_at: NullableTimestamp;
  updated_at: Timestamp;
}

/** Bookings of accumulated session vouchers (migration 0013). */
export interface PaymentSettlementsTable {
  id: Generated<number>;
  session_id: string;
  amount: Numeric;
  voucher_count: number;
  reason: 'threshold' | 'hourly' | 'close';
  settled_at: Timestamp;
}

/** One debit of a payment session (migration 0013). */
export interface PaymentVouchersTable {
  id: Generated<number>;
  session_id: string;
  nonce: string;
  plugin: string;
  amount: Numeric;
  /** The wallet's signature; null for the gateway's own vouchers. */
  signature: string | null;
  settlement_id: number | null;
  created_at: Timestamp;
}

/** Email provider events (migration 0017): inbound mail and delivery events, one row per delivery id. */
export interface EmailEventsTable {
  id: string;
  type: 'inbound' | 'sent' | 'delivered' | 'bounced' | 'opened' | 'clicked' | 'complained';
  email_id: string | null;
  from_address: string | null;
  to_addresses: Json<string[]>;
  subject: string | null;
  text_body: string | null;
  html_body: string | null;
  occurred_at: Timestamp;
  received_at: Timestamp;
  payload: Json<Record<string, unknown>>;
}

/** Addresses the mailer skips (migration 0017); lower-case. */
export interface EmailSuppressionsTable {
  address: string;
  reason: 'bounced' | 'complained';
  event_id: string | null;
  created_at: Timestamp;
}

/** Hosting provider events kept for polling (migration 0017); `seq` is the polling cursor. */
export interface HostingEventsTable {
  seq: Generated<number>;
  id: string;
  type: string;
  category: 'deployment' | 'platform';
  service_id: string | null;
  service_name: string | null;
  status: string | null;
  occurred_at: Timestamp;
  received_at: Timestamp;
  payload: Json<Record<string, unknown>>;
}

/** Invites (migration 0017): `user_id` invited `email`; only the code's SHA-256 is kept. */
export interface InvitesTable {
  id: string;
  code_hash: string;
  email: string;
  user_id: string;
  created_at: Timestamp;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  revoked_at: NullableTimestamp;
  revoked_by: string | null;
  accepted_at: NullableTimestamp;
  accepted_user_id: string | null;
}

/** Self-hosted home instances linked to an account (backend, migration 0017). */
export interface InstallationsTable {
  id: string;
  user_id: string;
  name: string;
  url: string | null;
  /** base64url of the raw 32-byte Ed25519 public key. */
  public_key: string;
  /** SHA-256 hex of the raw public key. */
  device_id: string;
  version: string | null;
  status: ColumnType<'pending' | 'linked', 'pending' | 'linked' | undefined, 'pending' | 'linked'>;
  challenge: string | null;
  challenge_expires_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  linked_at: NullableTimestamp;
  last_seen_at: NullableTimestamp;
}

/** Named groups of a user's agents (backend, migration 0017). */
export interface SwarmsTable {
  id: string;
  user_id: string;
  name: string;
  description: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface SwarmAgentsTable {
  swarm_id: string;
  agent_id: string;
  user_id: string;
  added_at: Timestamp;
}

/** Live streams created through `POST /api/radio/streams` (migration 0016); the id is the provider's. */
export interface LiveStreamsTable {
  id: string;
  name: string;
  /** Lower-case smart-contract wallet that passed the gate. */
  wallet: string;
  playback_id: string | null;
  status: ColumnType<LiveStreamStatus, LiveStreamStatus | undefined, LiveStreamStatus>;
  active_since: NullableTimestamp;
  last_event_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}
export type LiveStreamStatus = 'created' | 'active' | 'idle' | 'disabled';

/** Archive-or-delete decisions for recorded stream assets (migration 0016). */
export interface StreamAssetsTable {
  id: string;
  live_stream_id: string | null;
  playback_id: string | null;
  duration_seconds: number | null;
  /** Short side in pixels; 0 audio-only; null unknown. */
  resolution: number | null;
  decision: 'archive' | 'delete';
  reason: string;
  status: 'archived' | 'pending_deletion' | 'deleted' | 'deletion_failed';
  delete_after: NullableTimestamp;
  deletion_attempts: Generated<number>;
  last_error: string | null;
  deleted_at: NullableTimestamp;
  decided_at: Timestamp;
}

/** Streaming-provider webhook event ids already handled (migration 0016). */
export interface StreamWebhookEventsTable {
  id: string;
  type: string;
  received_at: Timestamp;
}

/** `POST /api/generate-video` jobs (migration 0016), row-level secured by `user_id`. */
export interface VideoJobsTable {
  id: string;
  user_id: string;
  type: 'demo' | 'marketing' | 'screenshot' | 'tutorial';
  input: Json<Record<string, unknown>>;
  status: ColumnType<VideoJobStatus, VideoJobStatus | undefined, VideoJobStatus>;
  render_id: string | null;
  object_key: string | null;
  url: string | null;
  bytes: number | null;
  content_type: string | null;
  error: string | null;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
}
export type VideoJobStatus = 'rendering' | 'completed' | 'failed' | 'timed_out';

/** Events an agent hosts (spec §2.9, migration 0015). */
export interface UndergroundEventsTable {
  id: Generated<number>;
  user_id: string;
  agent_id: string;
  name: string;
  description: string | null;
  venue: string | null;
  event_date: NullableTimestamp;
  ticket_price_usdc: ColumnType<string, string | number | undefined, string | number>;
  total_tickets: ColumnType<number, number | undefined, number>;
  created_at: Timestamp;
}

/** One wallet per agent (migration 0015): `address` lower-case; the private key sealed, never returned. */
export interface UndergroundWalletsTable {
  address: string;
  agent_id: string;
  user_id: string;
  private_key_enc: string;
  created_at: Timestamp;
}

/** Where the bus delivers an agent's messages (migration 0015); the signing secret sealed. */
export interface UndergroundWebhooksTable {
  agent_id: string;
  user_id: string;
  url: string;
  secret_enc: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Royalty splits (spec §3.4, migration 0015); amounts exact to the cent. */
export interface UndergroundSplitsTable {
  id: string;
  user_id: string;
  agent_id: string;
  name: string;
  total_amount: Numeric;
  from_address: string | null;
  status: ColumnType<'completed', 'completed' | undefined, 'completed'>;
  created_at: Timestamp;
}

export interface UndergroundSplitPayoutsTable {
  split_id: string;
  ordinal: number;
  user_id: string;
  address: string;
  share: Numeric;
  amount: Numeric;
}

type BusMessageStatus = 'delivering' | 'delivered' | 'failed';
type BusDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** Agent-to-agent bus messages (migration 0015); `message_id` is the replay guard. Owner connection only. */
export interface UndergroundBusMessagesTable {
  message_id: string;
  action: string;
  kind: 'direct' | 'booking' | 'amplify';
  from_agent_id: string;
  from_address: string;
  to_agent_id: string | null;
  message: Json<Record<string, unknown>>;
  status: ColumnType<BusMessageStatus, BusMessageStatus | undefined, BusMessageStatus>;
  created_at: Timestamp;
  completed_at: NullableTimestamp;
}

export interface UndergroundBusDeliveriesTable {
  message_id: string;
  agent_id: string;
  status: ColumnType<BusDeliveryStatus, BusDeliveryStatus | undefined, BusDeliveryStatus>;
  attempts: Generated<number>;
  last_error: string | null;
  delivered_at: NullableTimestamp;
}

/** Booking negotiations opened by `BOOKING_REQUEST` bus messages (migration 0015). */
export interface UndergroundNegotiationsTable {
  id: string;
  requester_agent_id: string;
  responder_agent_id: string;
  status: 'open' | 'accepted' | 'declined' | 'cancelled';
  terms: Json<Record<string, unknown>>;
  round: Generated<number>;
  last_offer_by: string;
  last_message_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Settlements of accepted bookings by the `booking-settlement` skill (migration 0023): one per booking. */
export interface BookingSettlementsTable {
  booking_id: string;
  payer_user_id: string;
  payer_agent_id: string;
  payee_user_id: string;
  payee_agent_id: string;
  amount: Numeric;
  settled_at: Timestamp;
}

/** Splits recorded by the `instant-split` skill (migration 0023); amounts exact to USDC's 6 decimals. */
export interface InstantSplitsTable {
  id: string;
  user_id: string;
  agent_id: string | null;
  booking_id: string | null;
  idempotency_key: string | null;
  request_hash: string;
  name: string | null;
  amount: Numeric;
  created_at: Timestamp;
}

export interface InstantSplitPayoutsTable {
  split_id: string;
  ordinal: number;
  user_id: string;
  address: string;
  share: Numeric;
  amount: Numeric;
}

export interface SchemaMigrationsTable {
  version: number;
  name: string;
  applied_at: Timestamp;
}

export interface DB {
  users: UsersTable;
  sessions: SessionsTable;
  audit_log: AuditLogTable;
  api_keys: ApiKeysTable;
  password_reset_tokens: PasswordResetTokensTable;
  email_verification_tokens: EmailVerificationTokensTable;
  email_outbox: EmailOutboxTable;
  oauth_accounts: OauthAccountsTable;
  security_events: SecurityEventsTable;
  agent_configs: AgentConfigsTable;
  config_backups: ConfigBackupsTable;
  workflows: WorkflowsTable;
  workflow_nodes: WorkflowNodesTable;
  workflow_runs: WorkflowRunsTable;
  bridge_messages: BridgeMessagesTable;
  bridge_reads: BridgeReadsTable;
  trading_keys: TradingKeysTable;
  agents: AgentsTable;
  usage_events: UsageEventsTable;
  memories: MemoriesTable;
  agent_files: AgentFilesTable;
  skills: SkillsTable;
  scheduled_tasks: ScheduledTasksTable;
  agent_deployments: AgentDeploymentsTable;
  agent_config_backups: AgentConfigBackupsTable;
  ai_model_selections: AiModelSelectionsTable;
  heartbeat_settings: HeartbeatSettingsTable;
  chat_messages: ChatMessagesTable;
  agent_credentials: AgentCredentialsTable;
  devices: DevicesTable;
  billing_checkouts: BillingCheckoutsTable;
  billing_events: BillingEventsTable;
  wallets: WalletsTable;
  payment_challenges: PaymentChallengesTable;
  payment_transactions: PaymentTransactionsTable;
  payment_sessions: PaymentSessionsTable;
  payment_settlements: PaymentSettlementsTable;
  payment_vouchers: PaymentVouchersTable;
  email_events: EmailEventsTable;
  email_suppressions: EmailSuppressionsTable;
  hosting_events: HostingEventsTable;
  invites: InvitesTable;
  installations: InstallationsTable;
  swarms: SwarmsTable;
  swarm_agents: SwarmAgentsTable;
  live_streams: LiveStreamsTable;
  stream_assets: StreamAssetsTable;
  stream_webhook_events: StreamWebhookEventsTable;
  video_jobs: VideoJobsTable;
  underground_events: UndergroundEventsTable;
  underground_wallets: UndergroundWalletsTable;
  underground_webhooks: UndergroundWebhooksTable;
  underground_splits: UndergroundSplitsTable;
  underground_split_payouts: UndergroundSplitPayoutsTable;
  underground_bus_messages: UndergroundBusMessagesTable;
  underground_bus_deliveries: UndergroundBusDeliveriesTable;
  underground_negotiations: UndergroundNegotiationsTable;
  booking_settlements: BookingSettlementsTable;
  instant_splits: InstantSplitsTable;
  instant_split_payouts: InstantSplitPayoutsTable;
  schema_migrations: SchemaMigrationsTable;
}

export type User = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
export type Session = Selectable<SessionsTable>;
export type AuditEntry = Selectable<AuditLogTable>;
export type ApiKey = Selectable<ApiKeysTable>;
