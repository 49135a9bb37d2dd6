import { type Static, Type } from '@sinclair/typebox';

export const KeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  keyPreview: Type.String(),
  createdAt: Type.String(),
  lastUsed: Type.Union([Type.String(), Type.Null()]),
});
export type KeyView = Static<typeof KeyView>;

export const CreatedKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key: Type.String({ description: 'shown once' }),
  createdAt: Type.String(),
});
export type CreatedKey = Static<typeof CreatedKey>;
