import type { ApiRequestBody, ApiResponse, paths } from '@aop/sdk';

/**
 * Names for the API's answers the pages pass around, each read from the types `@aop/sdk` generates from the web
 * service's OpenAPI document: the dashboard declares no answer shape of its own.
 */

export type { AgentList, ApiKey, CreatedApiKey, Session } from '@aop/sdk';
export type SessionUser = NonNullable<ApiResponse<'/api/auth/session'>['user']>;
export type Providers = ApiResponse<'/api/auth/providers'>;

export type AgentAnswer = ApiResponse<'/api/agents/{id}'>;
export type AgentRecord = AgentAnswer['agent'];
export type LifecycleAnswer = ApiResponse<'/api/agents/{id}/start', 'post'>;
export type Provisioned = ApiResponse<'/api/provision', 'post'>;
type AgentEvent = paths['/api/agents/{id}/events']['get']['responses'][200]['content']['text/event-stream'];
/** A `status` event of `GET /api/agents/{id}/events`. */
export type AgentStatusEvent = Extract<AgentEvent, { agentId: string }>;
/** The `done` event ending `GET /api/agents/{id}/events`. */
export type AgentDoneEvent = Exclude<AgentEvent, AgentStatusEvent>;

export type AgentConfigView = ApiResponse<'/api/agents/{id}/config'>;
export type ConfigBackup = AgentConfigView['backups'][number];
export type AppliedAgentConfig = NonNullable<AgentConfigView['applied']>;

export type ChatHistory = ApiResponse<'/api/chat'>;
export type ChatMessage = ChatHistory['messages'][number];

export type CronList = ApiResponse<'/api/cron'>;
export type CronJob = CronList['jobs'][number];
export type Heartbeat = ApiResponse<'/api/heartbeat'>;

export type DeviceLists = ApiResponse<'/api/devices'>;
export type Device = DeviceLists['pending'][number];

export type Workflow = ApiResponse<'/api/workflows'>['workflows'][number];
export type WorkflowNode = Workflow['nodes'][number];
export type WorkflowRun = ApiResponse<'/api/workflows/{workflowId}/runs'>['runs'][number];
export type WorkflowRunStep = WorkflowRun['steps'][number];

export type FleetGraph = ApiResponse<'/api/mission-control/fleet/graph'>;
export type FleetNode = FleetGraph['nodes'][number];
export type FleetEdge = FleetGraph['edges'][number];
export type FleetBooking = ApiResponse<'/api/mission-control/fleet/bookings'>['bookings'][number];

export type CostReport = ApiResponse<'/api/dashboard/cost'>;
export type NewAgentGate = ApiResponse<'/api/dashboard/new-agent'>;

export type Billing = ApiResponse<'/api/billing'>;
export type PlanPrice = Billing['prices']['plans'][number];
export type BillingUsage = Billing['usage'];
/** `POST /api/billing` answers by action: a card checkout, the BYOK flag, or this period's usage. */
type BillingAnswer = ApiResponse<'/api/billing', 'post'>;
export type CheckoutAnswer = Extract<BillingAnswer, { url: string }>;
export type ByokAnswer = Extract<BillingAnswer, { byok: boolean }>;
export type UsageAnswer = Extract<BillingAnswer, { usage: unknown }>;
/** `GET /api/wallet/top-up` without `session_id`: the newest checkouts. */
export type CardCheckouts = Extract<ApiResponse<'/api/wallet/top-up'>, { checkouts: unknown }>;
export type CardCheckout = CardCheckouts['checkouts'][number];

export type ProviderInfo = ApiResponse<'/api/wallet/provider'>;

export type BridgeHealth = ApiResponse<'/api/bridge/health'>;
/** `POST /api/bridge/send`'s body: the channels and priorities the bridge takes. */
export type BridgeMessage = ApiRequestBody<'/api/bridge/send', 'post'>;
export type WalletView = ApiResponse<'/api/wallet'>['wallets'][number];
export type PaymentSession = ApiResponse<'/api/wallet/sessions', 'post'>['session'];
/** `GET /api/wallet/sessions` without `sessionId`: the wallet's sessions. */
export type PaymentSessionList = Extract<ApiResponse<'/api/wallet/sessions'>, { sessions: unknown }>;

export type AccountSettings = ApiResponse<'/api/settings'>;
