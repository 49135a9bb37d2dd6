import { type Static, Type } from '@sinclair/typebox';

/** A card checkout started: the hosted payment page (`url`), where the browser goes next, and its session id. */
export const CheckoutAnswer = Type.Object({ url: Type.String(), sessionId: Type.String() });
export type CheckoutAnswer = Static<typeof CheckoutAnswer>;
