import { join } from 'node:path';

/** Services that keep a database; in embedded mode each has its own PGlite. */
export const SERVICE_DATABASES = ['web', 'backend'] as const;
export type ServiceDatabase = (typeof SERVICE_DATABASES)[number];

/** `DATA_DIR/<service>/pglite`: PGlite is one process's, so services never share a directory. */
export const pgliteDirFor = (dataDir: string, service: ServiceDatabase): string => join(dataDir, service, 'pglite');
