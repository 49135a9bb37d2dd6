import { type Static, Type } from '@sinclair/typebox';

export const Usd = Type.String({ description: 'USD, decimal string' });

export const PaymentSession = Type.Object({
  id: Type.String(),
  userAddress: Type.String(),
  deposit: Usd,
  spent: Usd,
  remaining: Usd,
  vouchers: Type.Array(Type.Object({ plugin: Type.String(), timestamp: Type.Number(), amount: Usd })),
  status: Type.Union([Type.Literal('active'), Type.Literal('settling'), Type.Literal('closed')]),
  createdAt: Type.Number({ description: 'epoch ms' }),
  lastSettledAt: Type.Number({ description: 'epoch ms' }),
});
export type PaymentSession = Static<typeof PaymentSession>;

export const SessionAnswer = Type.Object({ session: PaymentSession, note: Type.Optional(Type.String()) });
export type SessionAnswer = Static<typeof SessionAnswer>;

/** `GET /api/wallet/sessions?address=…`: the wallet's sessions, newest first. */
export const SessionList = Type.Object({ sessions: Type.Array(PaymentSession) });
export type SessionList = Static<typeof SessionList>;

/** `DELETE /api/wallet/sessions`: what is owed back to the wallet. */
export const SessionClosed = Type.Object({ success: Type.Literal(true), returned: Usd });
export type SessionClosed = Static<typeof SessionClosed>;
