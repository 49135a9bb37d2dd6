import type { App } from '@aop/core';
import type { WebConfig } from '../config.js';
import type { Mailer } from './clients/mailer.js';
import type { SystemMetrics } from './clients/system-metrics.js';
import type { AfterStart } from '../modules/agents/after-start.service.js';

/**
 * What every feature module is given when it is registered: the validated configuration and the clients built once
 * by `app.ts`. The database, the backend client and the clock are on the Fastify instance (`app.db`, `app.backend`,
 * `app.clock`), decorated once.
 */
export interface WebContext {
  config: WebConfig;
  mailer: Mailer;
  /** The machine's CPU and memory readings. */
  metrics: SystemMetrics;
  /** What follows a start (or a wake) of an agent once it is live: one for the app, its follow-ups ended when it closes. */
  afterStart: AfterStart;
}

/** A feature module: one folder under `modules/`, registering its routes (and nothing else) on the app. */
export type WebModule = (app: App, context: WebContext) => Promise<void>;
