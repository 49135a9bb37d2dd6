import { invalidAs, refuse } from '@aop/core/request-schema';
import { type Static, Type } from '@sinclair/typebox';
import { DEVICE_ACTIONS } from './devices.service.js';

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

/** Absent, null or empty counts as missing (spec §4.12 "Missing required fields: deviceId, action"). */
const present = Type.Not(Type.Union([Type.Null(), Type.Literal('')]));

/**
 * `POST /api/devices`: both fields are checked for presence before either is checked for its type (`{ deviceId: 5,
 * action: null }` is "missing"), hence two schemas in order: presence, then the fields' own errors. A device id over
 * the length limit is "not found" after the action is checked, so that stays with the handler.
 */
export const DeviceMoveBody = Type.Intersect([
  Type.Object({ deviceId: present, action: present }, invalidAs(refuse('MISSING_REQUIRED_FIELDS_DEVICEID_ACTION'))),
  Type.Object({
    deviceId: Type.String(invalidAs(refuse('INVALID_REQUEST_BODY'))),
    action: Type.Union(
      DEVICE_ACTIONS.map((action) => Type.Literal(action)),
      invalidAs(refuse('INVALID_ACTION_APPROVE_DENY_REVOKE')),
    ),
    // Issue #19: which of the caller's agents; without it, the account's primary agent (spec §4.12).
    agentId: Type.Optional(Type.String({ maxLength: 64, ...invalidAs(refuse('INVALID_REQUEST_BODY')) })),
  }),
]);
export type DeviceMoveBody = Static<typeof DeviceMoveBody>;
