import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { X402_ACTIONS } from './x402.service.js';

/**
 * Spec §4.5 `POST /api/x402`. Only `action` is typed: the other fields are read per action after it (`join-colony`
 * and `pay` authenticate first; every `pay` attempt, a malformed one included, is audited with its refusal; a
 * non-string `agentId` means the default for `fitness` and `pricing`), so they stay as sent for the handler.
 * This route's own error handler answers any refused body with `X402_INVALID_ACTION` in the x402 error shape.
 */
export const X402Body = Type.Object({
  action: Type.Union(
    X402_ACTIONS.map((action) => Type.Literal(action)),
    invalidAs(refuse('X402_INVALID_ACTION')),
  ),
  agentId: Type.Optional(Type.Unknown({ description: 'required for join-colony and pay; fitness and pricing default to atlas' })),
  walletAddress: Type.Optional(Type.Unknown({ description: 'join-colony: the wallet that joins' })),
  amount: Type.Optional(Type.Unknown({ description: 'pay: a number, more than 0 and at most 100' })),
  currency: Type.Optional(Type.Unknown({ description: 'pay: default USDC, forwarded as is' })),
  recipient: Type.Optional(Type.Unknown({ description: 'pay: EVM 0x + 40 hex, or Solana base58 of 32 to 44 characters' })),
  endpoint: Type.Optional(Type.Unknown({ description: 'pay: optional' })),
  method: Type.Optional(Type.Unknown({ description: 'pay: default "default"' })),
});
export type X402Body = Static<typeof X402Body>;
