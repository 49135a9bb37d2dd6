import { type Static, Type } from '@sinclair/typebox';

export const TradingKeyStatus = Type.Object({ configured: Type.Boolean() });
export type TradingKeyStatus = Static<typeof TradingKeyStatus>;

export const Success = Type.Object({ success: Type.Literal(true) });
export type Success = Static<typeof Success>;
