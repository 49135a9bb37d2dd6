import { type App, DomainError } from '@aop/core';
import { cronAdd, cronRemove } from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import type { WebContext } from '../../platform/context.js';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { CRON_AGENT_ID_MAX, CreateCronJobBody, CronJob, CronList } from './schedule.schemas.js';
import {
  checkedCronJob,
  cronAddParams,
  cronJobView,
  downMessage,
  gatewayFailure,
  gatewayFailureMessage,
  getOwnJob,
  isJobNotFound,
  listOwnJobs,
  systemJob,
} from './cron-jobs.service.js';
import { type GatewayTarget, chosenGateway, withGateway } from '../../platform/clients/user-gateway.js';
import { againOnceLive } from '../agents/lifecycle.service.js';

/** Longest job id we pass on; OpenClaw's are UUIDs. */
const JOB_ID_MAX = 200;

/**
 * Issue #19: `agentId` names which of the caller's agents' gateway (404 when not theirs); absent or blank keeps the
 * spec's gateway (the primary agent's, else the shared one).
 */
const CronAgentQuery = Type.Object({ agentId: Type.Optional(Type.String({ maxLength: CRON_AGENT_ID_MAX })) });
const namedAgent = (agentId: string | undefined) => agentId?.trim() || undefined;

/**
 * Spec §4.3: the caller's cron jobs on their gateway (their agent's, else the shared one where they see only their own
 * jobs; see `services/cron-jobs.ts`). Each request opens one gateway connection.
 */
export async function cronRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };
  const timeoutMs = config.gateway.requestTimeoutMs;
  // A change to a sleeping agent's jobs wakes it and waits for it, like a message; reading them does not.
  const { startWaitMs } = config.gateway;

  app.get(
    '/api/cron',
    {
      schema: {
        tags: ['cron'],
        querystring: CronAgentQuery,
        response: {
          200: CronList,
        },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      let target: GatewayTarget | undefined;
      try {
        target = await chosenGateway(deps, user, namedAgent(request.query.agentId));
        const chosen = target;
        const jobs = await withGateway(chosen, timeoutMs, (conn) => listOwnJobs(conn, chosen));
        return { jobs: jobs.map(cronJobView), total: jobs.length, source: 'gateway' as const };
      } catch (err) {
        // Spec: an unreachable gateway is a 200 with no jobs and the reason (a stopped or sleeping agent's, in words).
        const unreachable = gatewayFailureMessage(err);
        if (unreachable === null) throw err;
        const error = (target && (await downMessage(deps, user, target))) ?? unreachable;
        request.log.info({ error }, 'cron list: gateway unavailable');
        return { jobs: [], error, source: 'gateway-error' as const };
      }
    },
  );

  app.post(
    '/api/cron',
    {
      preValidation: userBeforeBody,
      config: { invalidBody: 'CRON_REQUIRED' },
      schema: {
        tags: ['cron'],
        body: CreateCronJobBody,
        response: { 200: Type.Object({ success: Type.Literal(true), source: Type.Literal('gateway'), job: CronJob }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const job = checkedCronJob(request.body);
      try {
        const target = await chosenGateway(deps, user, namedAgent(request.body.agentId));
        // Refused whether or not its gateway answers: it answers when it runs on for the customer's other agents.
        if (target.stopped) throw new DomainError('JOB_AGENT_STOPPED');
        const added = await againOnceLive(deps, user, target.agentId, startWaitMs, () =>
          withGateway(target, timeoutMs, (conn) => cronAdd(conn, cronAddParams(target, job))),
        );
        return { success: true as const, source: 'gateway' as const, job: cronJobView(added) };
      } catch (err) {
        throw gatewayFailure(err);
      }
    },
  );

  app.delete(
    '/api/cron',
    {
      schema: {
        tags: ['cron'],
        querystring: Type.Object({ jobId: Type.Optional(Type.String()), ...CronAgentQuery.properties }),
        response: { 200: Type.Object({ success: Type.Literal(true), source: Type.Literal('gateway') }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const jobId = request.query.jobId?.trim();
      if (!jobId) throw new DomainError('JOBID_REQUIRED');
      if (jobId.length > JOB_ID_MAX) throw new DomainError('JOB_NOT_FOUND');
      try {
        const target = await chosenGateway(deps, user, namedAgent(request.query.agentId));
        await againOnceLive(deps, user, target.agentId, startWaitMs, () =>
          withGateway(target, timeoutMs, async (conn) => {
            // On a shared gateway another user's job is "not found", exactly like a job that does not exist.
            const job = await getOwnJob(conn, target, jobId);
            if (!job) throw new DomainError('JOB_NOT_FOUND');
            // OpenClaw's own jobs follow the agent's configuration and come back when it is next applied: refused here
            // in words rather than passed on (the gateway refuses some of them in its own terms, and removes others).
            if (systemJob(job)?.deletable === false) throw new DomainError('SYSTEM_JOB_READ_ONLY');
            await cronRemove(conn, jobId);
          }),
        );
        return { success: true as const, source: 'gateway' as const };
      } catch (err) {
        if (isJobNotFound(err)) throw new DomainError('JOB_NOT_FOUND');
        throw gatewayFailure(err);
      }
    },
  );
}
