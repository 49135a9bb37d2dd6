import { type Static, Type } from '@sinclair/typebox';

export const Device = Type.Object({
  id: Type.String(),
  name: Type.String(),
  ip: Type.String(),
  firstSeen: Type.String({ format: 'date-time' }),
  lastSeen: Type.String({ format: 'date-time' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('denied'), Type.Literal('revoked')]),
});
export type Device = Static<typeof Device>;

export const DeviceLists = Type.Object({ pending: Type.Array(Device), approved: Type.Array(Device) });
export type DeviceLists = Static<typeof DeviceLists>;
