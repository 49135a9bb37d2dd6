import type { Database } from '@aop/db';

/** The `agents` feed: the user's agents with their provisioning status, newest first, and counts by status. */
export async function agentsFeed(db: Database, userId: string) {
  const rows = await db.withUser(userId, (trx) =>
    trx
      .selectFrom('agents')
      .select(['id', 'name', 'model', 'status', 'plan', 'url', 'created_at', 'updated_at'])
      .orderBy('created_at', 'desc')
      .execute(),
  );
  const byStatus: Record<string, number> = {};
  for (const r of rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
  return {
    total: rows.length,
    byStatus,
    agents: rows.map((r) => ({
      id: r.id,
      name: r.name,
      model: r.model,
      status: r.status,
      plan: r.plan,
      url: r.url,
      createdAt: r.created_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
    })),
  };
}
