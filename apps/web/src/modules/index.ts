import type { WebModule } from '../platform/context.js';
import { accountsModule } from './accounts/index.js';
import { agentConfigModule } from './agent-config/index.js';
import { agentDataModule } from './agent-data/index.js';
import { agentsModule } from './agents/index.js';
import { apiKeysModule } from './api-keys/index.js';
import { billingModule } from './billing/index.js';
import { bridgeModule } from './bridge/index.js';
import { chatModule } from './chat/index.js';
import { dataFeedsModule } from './data-feeds/index.js';
import { demoModule } from './demo/index.js';
import { devicesModule } from './devices/index.js';
import { fleetModule } from './fleet/index.js';
import { missionControlModule } from './mission-control/index.js';
import { openAiCompatModule } from './openai-compat/index.js';
import { opsModule } from './ops/index.js';
import { paymentsModule } from './payments/index.js';
import { pluginGatewayModule } from './plugin-gateway/index.js';
import { scheduleModule } from './schedule/index.js';
import { signInModule } from './sign-in/index.js';
import { skillsModule } from './skills/index.js';
import { streamingModule } from './streaming/index.js';
import { tradingModule } from './trading/index.js';
import { usageModule } from './usage/index.js';
import { videoModule } from './video/index.js';
import { walletsModule } from './wallets/index.js';
import { webhooksModule } from './webhooks/index.js';
import { workflowsModule } from './workflows/index.js';

/**
 * Every feature module of the web service, one folder each (the folder names the URL area it serves; see
 * docs/architecture.md). `app.ts` registers them in this order.
 */
export const MODULES: readonly WebModule[] = [
  opsModule,
  accountsModule,
  signInModule,
  paymentsModule,
  apiKeysModule,
  agentConfigModule,
  workflowsModule,
  bridgeModule,
  billingModule,
  walletsModule,
  agentsModule,
  chatModule,
  openAiCompatModule,
  tradingModule,
  usageModule,
  agentDataModule,
  pluginGatewayModule,
  demoModule,
  devicesModule,
  missionControlModule,
  skillsModule,
  scheduleModule,
  streamingModule,
  videoModule,
  webhooksModule,
  dataFeedsModule,
  fleetModule,
];
