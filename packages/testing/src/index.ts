export * from './database.js';
export * from './http.js';
export * from './service.js';
