export * from './capacity.js';
export * from './host.js';
export * from './local-host.js';
export * from './openclaw-config.js';
export * from './proc.js';
export * from './runtime.js';
