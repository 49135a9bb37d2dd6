import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { VIDEO_LIMITS, VIDEO_TYPES } from './video.service.js';

const { name, text, items, item } = VIDEO_LIMITS;
const list = `1 to ${items} non-empty strings of at most ${item} characters`;

/**
 * Spec §4.16 `POST /api/generate-video`. Only `type` is typed here: every other field belongs to one type and the
 * other types ignore it (a `demo` body may carry any `features`), so declaring it at this level would refuse bodies
 * that are answered today. Those fields are read by `parseVideoRequest` once the type is known.
 */
export const GenerateVideoBody = Type.Object(
  {
    type: Type.Union(
      VIDEO_TYPES.map((type) => Type.Literal(type)),
      invalidAs(refuse('INVALID_VIDEO_TYPE')),
    ),
    agentName: Type.Optional(Type.Unknown({ description: `demo: at most ${name} characters` })),
    agentDescription: Type.Optional(Type.Unknown({ description: `demo: at most ${text} characters` })),
    productName: Type.Optional(Type.Unknown({ description: `marketing: at most ${name} characters` })),
    features: Type.Optional(Type.Unknown({ description: `marketing: ${list}` })),
    imageUrl: Type.Optional(Type.Unknown({ description: 'screenshot: an http or https URL' })),
    description: Type.Optional(Type.Unknown({ description: `screenshot: at most ${text} characters` })),
    topic: Type.Optional(Type.Unknown({ description: `tutorial: at most ${name} characters` })),
    steps: Type.Optional(Type.Unknown({ description: `tutorial: ${list}` })),
  },
  { additionalProperties: true },
);
export type GenerateVideoBody = Static<typeof GenerateVideoBody>;
