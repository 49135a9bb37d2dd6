/** What `resetMemory` removes, relative to the state dir: sessions and the memory index, then the memory files. */
export const MEMORY_PATHS = ['agents', 'workspace/memory', 'workspace/MEMORY.md', 'workspace/DREAMS.md', 'workspace/memory_summary.md'];
