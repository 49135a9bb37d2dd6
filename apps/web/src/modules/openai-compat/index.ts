import type { WebModule } from '../../platform/context.js';
import { openAiCompatRoutes } from './openai-compat.routes.js';

/** The OpenAI-compatible API over one's agents: `/v1/chat/completions`, `/v1/models` (issue #22). */
export const openAiCompatModule: WebModule = async (app, context) => {
  await app.register(openAiCompatRoutes, context);
};
