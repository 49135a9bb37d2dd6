import type { App } from '@aop/core';
import { Type } from '@sinclair/typebox';
import { requireSessionUser, requireUser, sessionUserBeforeBody } from '../../platform/http/auth.js';
import { listBookings, settleBooking } from './booking-settlement.service.js';
import { BookingQuery, BookingSettlement, SettleBookingBody, SettleableBooking } from './skills.schemas.js';

/**
 * The built-in skill `booking-settlement` (spec §4.18; docs/decisions.md "Booking settlement and instant splits"):
 * the caller's accepted underground bookings and their settlement. Reading takes a session or an API key; settling
 * takes a signed-in session, as recording a royalty split does (a leaked `sk_` key must not mark money as paid).
 */
export async function bookingSettlementRoutes(app: App): Promise<void> {
  app.get(
    '/api/skills/booking-settlement',
    {
      schema: {
        tags: ['skills'],
        summary: 'Accepted bookings of your agents and their settlement',
        querystring: BookingQuery,
        response: { 200: Type.Object({ bookings: Type.Array(SettleableBooking) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const { status, agentId, limit = 50 } = request.query;
      return { bookings: await listBookings(app.db, user.id, { status, agentId, limit }) };
    },
  );

  app.post(
    '/api/skills/booking-settlement',
    {
      preValidation: sessionUserBeforeBody,
      config: { invalidBody: 'INVALID_REQUEST_BODY' },
      schema: {
        tags: ['skills'],
        summary: 'Settle an accepted booking (its payer, once)',
        description: '201 with the new settlement; 200 with the same settlement when the booking was already settled (a retry is safe).',
        body: SettleBookingBody,
        response: { 200: Type.Object({ settlement: BookingSettlement }), 201: Type.Object({ settlement: BookingSettlement }) },
      },
    },
    async (request, reply) => {
      const user = await requireSessionUser(request);
      const { settlement, created } = await settleBooking(app.db, user.id, request.body);
      return reply.code(created ? 201 : 200).send({ settlement });
    },
  );
}
