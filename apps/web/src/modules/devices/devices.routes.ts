import { type App, DomainError } from '@aop/core';
import {
  GatewayError,
  devicePairApprove,
  devicePairList,
  devicePairReject,
  devicePairRemove,
  isUnknownPairingTarget,
} from '@aop/gateway-client';
import { Type } from '@sinclair/typebox';
import type { WebConfig } from '../../config.js';
import type { WebContext } from '../../platform/context.js';
import { requireUser, userBeforeBody } from '../../platform/http/auth.js';
import { DeviceLists, DeviceMoveBody } from './devices.schemas.js';
import { DEVICE_MOVES, canMove, claimMove, findDevice, listDevices, mirrorPairingList, undoMove } from './devices.service.js';
import type { AuthUser } from '../../platform/sessions.js';
import {
  type GatewayTarget,
  GatewayUnavailableError,
  findUserAgent,
  gatewayUnavailableError,
  ownAgentGateway,
  resolveGateway,
  withGateway,
} from '../../platform/clients/user-gateway.js';
import { againOnceLive, gatewayDownByState, isWakeFailure, readAgentState } from '../agents/lifecycle.service.js';

const DEVICE_ID_MAX = 256;

/**
 * Whose devices: the gateway of the user's own agent. A user without one has none (the shared platform gateway's
 * devices are the platform's, never shown to a user). `gateway` is null, with `unavailable` saying why, when the
 * agent is known but its gateway cannot be reached now (no token, backend down).
 */
interface DeviceScope {
  agentId: string | null;
  gateway: GatewayTarget | null;
  unavailable: DomainError | null;
}

async function deviceScope(app: App, config: WebConfig, user: AuthUser, agentId?: string): Promise<DeviceScope> {
  if (agentId !== undefined) return namedAgentScope(app, user, agentId);
  try {
    const target = await resolveGateway({ db: app.db, backend: app.backend, config }, user);
    if (target.kind !== 'agent' || !target.agentId) return { agentId: null, gateway: null, unavailable: null };
    return { agentId: target.agentId, gateway: target, unavailable: null };
  } catch (err) {
    if (!(err instanceof GatewayUnavailableError)) throw err;
    if (err.reason === 'no-agent') return { agentId: null, gateway: null, unavailable: null };
    const agent = await findUserAgent(app.db, user.id);
    return { agentId: agent?.id ?? null, gateway: null, unavailable: gatewayUnavailableError(err) };
  }
}

/**
 * Issue #19: the devices of one named agent of the caller (`agentId`), whichever is primary. Another user's agent, or
 * none, is 404 `Agent not found`; one without a gateway address yet lists from the record and refuses moves (409).
 */
async function namedAgentScope(app: App, user: AuthUser, agentId: string): Promise<DeviceScope> {
  try {
    return { agentId, gateway: await ownAgentGateway(app, user, agentId), unavailable: null };
  } catch (err) {
    if (err instanceof DomainError && err.code === 'AGENT_NOT_DEPLOYED') return { agentId, gateway: null, unavailable: err };
    if (err instanceof GatewayUnavailableError) return { agentId, gateway: null, unavailable: gatewayUnavailableError(err) };
    throw err;
  }
}

/** `agentId` as sent: absent or blank means the spec's behaviour (the account's primary agent). */
const namedAgent = (agentId: string | undefined) => (agentId?.trim() ? agentId.trim() : undefined);

/** Spec §4.12 / §3.1: the devices paired with the user's agent gateway, and the owner's approve / deny / revoke. */
export async function deviceRoutes(app: App, { config, afterStart }: Pick<WebContext, 'config' | 'afterStart'>): Promise<void> {
  const timeoutMs = config.gateway.requestTimeoutMs;
  const deps = { db: app.db, backend: app.backend, config, clock: app.clock, afterStart };

  /**
   * Reads the gateway's pairing state into the record. Returns null when it did, else the error to answer a move with
   * (a listing then comes from the record alone: the last state the platform saw). Before a move (`wake`) a sleeping
   * agent is woken and waited for, like by a message: a pairing changes only where the gateway runs.
   */
  async function sync(scope: DeviceScope, user: AuthUser, options: { wake?: boolean } = {}): Promise<DomainError | null> {
    const { gateway } = scope;
    if (!gateway || !scope.agentId) return scope.unavailable;
    const listedAt = new Date(app.clock());
    try {
      const read = () => withGateway(gateway, timeoutMs, (conn) => devicePairList(conn, { timeoutMs }));
      const list = await (options.wake ? againOnceLive(deps, user, scope.agentId, config.gateway.startWaitMs, read) : read());
      await mirrorPairingList(app.db, user.id, scope.agentId, list, listedAt, new Date(app.clock()));
      return null;
    } catch (err) {
      if (isWakeFailure(err)) return new DomainError('AGENT_GATEWAY_ERROR', { detail: err.message });
      if (!(err instanceof GatewayError)) throw err;
      // The Devices tab reads the list every 10 s: an agent asleep or stopped would log a warning at each read for what
      // its state already says. A gateway down while the agent is live (or its state unknown) is a failure: warned.
      const state = await readAgentState(deps, user, scope.agentId).catch(() => null);
      const fields = { agentId: scope.agentId, code: err.code, state: state?.state ?? null };
      const message = 'device list: agent gateway unavailable, answering from the record';
      if (state && gatewayDownByState(state.state)) app.log.debug(fields, message);
      else app.log.warn(fields, message);
      return new DomainError('AGENT_GATEWAY_ERROR', { detail: err.message });
    }
  }

  app.get(
    '/api/devices',
    {
      schema: {
        tags: ['devices'],
        // Issue #19: which of the caller's agents; without it, the account's primary agent (spec §4.12).
        querystring: Type.Object({ agentId: Type.Optional(Type.String({ maxLength: 64 })) }),
        response: { 200: DeviceLists },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const scope = await deviceScope(app, config, user, namedAgent(request.query.agentId));
      if (!scope.agentId) return { pending: [], approved: [] };
      await sync(scope, user);
      return listDevices(app.db, user.id, scope.agentId);
    },
  );

  app.post(
    '/api/devices',
    {
      preValidation: userBeforeBody,
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['devices'],
        body: DeviceMoveBody,
        response: { 200: Type.Object({ success: Type.Literal(true), ...DeviceLists.properties }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { deviceId, action } = request.body;
      // No device id is that long; it cannot be on record.
      if (deviceId.length > DEVICE_ID_MAX) throw new DomainError('DEVICE_NOT_FOUND');
      // Another user's agent is 404 `Agent not found`, like a missing one.
      const scope = await deviceScope(app, config, user, namedAgent(request.body.agentId));
      if (!scope.agentId) throw new DomainError('DEVICE_NOT_FOUND');
      const agentId = scope.agentId;
      // Fresh state first: a device may have asked (or been approved elsewhere) since the owner's last listing.
      const unreachable = await sync(scope, user, { wake: true });
      const record = await findDevice(app.db, user.id, agentId, deviceId);
      if (!record) throw new DomainError('DEVICE_NOT_FOUND');
      const move = DEVICE_MOVES[action];
      if (!canMove(record, action)) throw new DomainError(move.refusal);
      // The gateway is where a pairing takes effect: no move is recorded that it did not make.
      if (unreachable || !scope.gateway) throw unreachable ?? new DomainError('AGENT_GATEWAY_ERROR_UNAVAILABLE');
      const gateway = scope.gateway;

      const claimed = await claimMove(app.db, user.id, agentId, deviceId, action, new Date(app.clock()));
      // Another request moved the device between the check and the claim.
      if (!claimed) throw new DomainError(move.refusal);

      try {
        await withGateway(gateway, timeoutMs, async (conn) => {
          if (action === 'approve') await devicePairApprove(conn, claimed.requestId as string, { timeoutMs });
          else if (action === 'deny') await devicePairReject(conn, claimed.requestId as string, { timeoutMs });
          else await devicePairRemove(conn, deviceId, { timeoutMs });
        });
      } catch (err) {
        if (!(err instanceof GatewayError)) {
          await undoMove(app.db, user.id, agentId, deviceId, action, new Date(app.clock()));
          throw err;
        }
        if (isUnknownPairingTarget(err)) {
          // deny: the request is gone already (expired); revoke: the device is unpaired already. Both stand.
          // approve: the request expired in between; nothing was paired, so the device is no longer pending.
          if (action === 'approve') {
            await undoMove(app.db, user.id, agentId, deviceId, action, new Date(app.clock()), { requestGone: true });
            throw new DomainError(move.refusal);
          }
        } else {
          await undoMove(app.db, user.id, agentId, deviceId, action, new Date(app.clock()));
          throw new DomainError('AGENT_GATEWAY_ERROR', { detail: err.message });
        }
      }
      request.log.info({ agentId, deviceId, action }, 'device pairing decision applied');
      return { success: true as const, ...(await listDevices(app.db, user.id, agentId)) };
    },
  );
}
