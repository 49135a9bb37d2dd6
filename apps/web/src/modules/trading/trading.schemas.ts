import { invalidAs, NOT_BLANK, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { TRADING_KEY_MAX } from './trading.service.js';

export const TradingKeyStatus = Type.Object({ configured: Type.Boolean() });
export type TradingKeyStatus = Static<typeof TradingKeyStatus>;

export const Success = Type.Object({ success: Type.Literal(true) });
export type Success = Static<typeof Success>;

/** The length limit applies to the key once trimmed, so it stays with the handler. */
export const SaveTradingKeyBody = Type.Object({
  apiKey: Type.String({
    ...NOT_BLANK,
    description: `at most ${TRADING_KEY_MAX} characters once surrounding whitespace is trimmed`,
    ...invalidAs(refuse('FIELD_REQUIRED', { field: 'apiKey' })),
  }),
});
export type SaveTradingKeyBody = Static<typeof SaveTradingKeyBody>;

export const TradingPromptBody = Type.Object({
  prompt: Type.String({ ...NOT_BLANK, ...invalidAs(refuse('FIELD_REQUIRED', { field: 'prompt' })) }),
  threadId: Type.Optional(
    orNull(
      Type.String({
        description: 'continues a conversation; null or empty: a new one',
        ...invalidAs(refuse('FIELD_NOT_STRING', { field: 'threadId' })),
      }),
    ),
  ),
});
export type TradingPromptBody = Static<typeof TradingPromptBody>;
