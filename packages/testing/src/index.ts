export * from './database.js';
export * from './http.js';
export * from './service.js';
export * from './fakes/docker-engine.js';
export * from './fakes/smtp.js';
