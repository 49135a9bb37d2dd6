/** What `resetMemory` removes, relative to the state dir: sessions and the memory index, then the memory files. */
export const MEMORY_PATHS = ['agents', 'workspace/memory', 'workspace/MEMORY.md', 'workspace/DREAMS.md', 'workspace/memory_summary.md'];

/**
 * What a memory reset removes of one agent of a gateway holding several (customer-scoped gateways), relative to the
 * gateway's state dir: its own sessions (`agents/<openclawId>`, where OpenClaw keeps each agent's) and the memory files
 * of its workspace (`workspaceDir`, relative too).
 */
export function memoryPathsOf(openclawId: string, workspaceDir: string): string[] {
  return MEMORY_PATHS.map((path) => (path === 'agents' ? `agents/${openclawId}` : path.replace(/^workspace\//, `${workspaceDir}/`)));
}
