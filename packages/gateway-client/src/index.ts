export * from './device-identity.js';
export * from './gateway-client.js';
