/** Rows of the `memories` table (spec §4.18 memory) as the API shows them; shared by `/api/memory` and `GET /api/agent`. */

export interface MemoryRow {
  id: string;
  agent_id: string | null;
  content: string;
  tags: string[];
  created_at: Date;
  updated_at: Date;
}

export interface MemoryView {
  id: string;
  agentId: string | null;
  content: string;
  tags: string[];
  createdAt: string;
  updatedAt: string;
}

export const MEMORY_COLUMNS = ['id', 'agent_id', 'content', 'tags', 'created_at', 'updated_at'] as const;

export const memoryView = (row: MemoryRow): MemoryView => ({
  id: row.id,
  agentId: row.agent_id,
  content: row.content,
  tags: row.tags,
  createdAt: row.created_at.toISOString(),
  updatedAt: row.updated_at.toISOString(),
});
