/** The bounded-concurrency helper now lives in src/registry/pool.ts, shared with the request paths. */
export { forEach } from '../pool.js';
