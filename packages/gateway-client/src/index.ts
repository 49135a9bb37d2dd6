export * from './device-identity.js';
export * from './device-pairing.js';
export * from './gateway-client.js';
export * from './metrics.js';
export * from './reconnecting.js';
