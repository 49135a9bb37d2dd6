import { type App, DomainError } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { FastifyBaseLogger } from 'fastify';
import { type Address, isAddress } from 'viem';
import type { WebConfig } from '../../config.js';
import { type GateBalance, gateConfigured, gatingClient, readGateBalance, wholeTokens } from '../../platform/clients/chain.js';
import { GateResult } from './sign-in.schemas.js';

const MINUTE = 60_000;

/**
 * The gate balance of `address`: 503 when gating is not configured, 400 for a
 * missing or malformed address, 502 when the gating network cannot answer.
 */
export async function checkGateBalance(
  config: WebConfig,
  address: string | undefined,
  log: FastifyBaseLogger,
): Promise<GateBalance & { address: Address; token: Address }> {
  const gating = config.gating;
  const client = gatingClient(gating);
  if (!client || !gateConfigured(gating)) throw new DomainError('TOKEN_GATING_NOT_CONFIGURED');
  if (!address) throw new DomainError('MISSING_ADDRESS');
  if (!isAddress(address, { strict: false })) throw new DomainError('INVALID_ADDRESS');
  const holder = address.toLowerCase() as Address;
  try {
    const result = await readGateBalance(client, { token: gating.tokenAddress, holder, minBalance: gating.minBalance });
    return { ...result, address: holder, token: gating.tokenAddress };
  } catch (err) {
    log.error({ err }, 'gate balance check failed');
    throw new DomainError('GATE_CHECK_FAILED');
  }
}

/** Spec §4.1 `GET|POST /api/auth/token-gating/verify`: does a wallet hold at least GATE_MIN_BALANCE gate tokens (§8: 1,250,000)? */
export async function tokenGatingRoutes(app: App, { config }: { config: WebConfig }): Promise<void> {
  const limit = app.rateLimit({ name: 'token-gating', max: 60, windowMs: MINUTE, message: 'Too many requests' });

  async function verify(address: string | undefined, log: FastifyBaseLogger) {
    const gate = await checkGateBalance(config, address, log);
    return {
      address: gate.address,
      allowed: gate.allowed,
      balance: wholeTokens(gate.balance, gate.decimals),
      required: config.gating.minBalance,
      token: gate.token,
      chainId: config.gating.chainId,
    };
  }

  app.post(
    '/api/auth/token-gating/verify',
    {
      onRequest: limit,
      config: { invalidBody: 'MISSING_ADDRESS' },
      schema: { tags: ['accounts'], body: Type.Object({ address: Type.Optional(Type.String()) }), response: { 200: GateResult } },
    },
    async (request) => verify(request.body?.address, request.log),
  );

  app.get(
    '/api/auth/token-gating/verify',
    {
      onRequest: limit,
      schema: {
        tags: ['accounts'],
        querystring: Type.Object({ address: Type.Optional(Type.String()) }),
        response: { 200: GateResult },
      },
    },
    async (request) => verify(request.query.address, request.log),
  );
}
