export * from './common.js';
export * from './resources.js';
export * from './endpoints.js';
export * from './presets.js';
export * from './runtime.js';
export * from './secrets.js';
export * from './rollouts.js';
