export * from './audit.js';
export * from './database.js';
export * from './migrate.js';
export * from './schema.js';
export { sql } from 'kysely';
export * from './paths.js';
export * from './errors.js';
export * from './usage-ledger.js';
export * from './prepared.js';
