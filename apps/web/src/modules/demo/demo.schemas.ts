import { NOT_BLANK, invalidAs, orNull, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';

/**
 * `POST /api/demo/chat` for the demo's models (configuration, so the schema is built when the route is). Each field
 * answers with the message its handler check gave before (see `invalidAs` in @aop/core/request-schema), in the order the handler
 * checked them: message, conversation, model.
 */
export function demoChatBody(modelIds: readonly string[]) {
  return Type.Object({
    message: Type.String({ ...NOT_BLANK, description: 'cut to 4000 characters', ...invalidAs(refuse('MESSAGE_REQUIRED')) }),
    conversation: Type.Optional(
      orNull(
        // Entries are free-form: only `user` entries with text are kept, the others dropped, never refused.
        Type.Array(Type.Unknown(), {
          description: 'earlier `{ role, content }` entries; only the `user` ones with text are sent',
          ...invalidAs(refuse('CONVERSATION_ARRAY')),
        }),
      ),
    ),
    model: Type.Optional(
      Type.Unsafe<string | null>({
        type: ['string', 'null'],
        // Absent, null or empty: the first model.
        enum: [null, '', ...modelIds],
        description: 'one of the ids `GET /api/demo/chat` lists; absent, null or empty: the first',
        ...invalidAs(refuse('UNSUPPORTED_DEMO_MODEL')),
      }),
    ),
    // Accepted for clients of the reference whatever its value; the demo has one mode.
    mode: Type.Optional(Type.Unknown({ description: 'ignored' })),
  });
}
export type DemoChatBody = Static<ReturnType<typeof demoChatBody>>;
