import { type App, DomainError, type PlainErrorCode } from '@aop/core';
import { Type } from '@sinclair/typebox';
import type { Database } from '@aop/db';
import { requireUser } from './auth.js';

/**
 * `DELETE <url>?id=…` for one of the caller's rows (memories, scheduled tasks): 401 without a sign-in, 400
 * `id is required`, 404 with the area's own code when `remove` finds no such row of the caller's, else
 * `{ success: true }`.
 */
export function deleteByIdRoute(
  app: App,
  options: {
    url: string;
    tag: string;
    remove: (db: Database, userId: string, id: string) => Promise<boolean>;
    notFound: PlainErrorCode;
  },
): void {
  app.delete(
    options.url,
    {
      schema: {
        tags: [options.tag],
        querystring: Type.Object({ id: Type.Optional(Type.String({ maxLength: 200 })) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
    },
    async (request) => {
      const user = await requireUser(request);
      const id = request.query.id?.trim();
      if (!id) throw new DomainError('FIELD_REQUIRED', { field: 'id' });
      if (!(await options.remove(app.db, user.id, id))) throw new DomainError(options.notFound);
      return { success: true as const };
    },
  );
}
