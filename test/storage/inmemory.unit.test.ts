import { InMemoryDriver } from '../../src/storage/inmemory.js';
import { runDriverSuite } from './driver-suite.js';

// Content lives in RAM by design: a smaller large write, and no memory bound.
runDriverSuite('inmemory', async () => ({ driver: new InMemoryDriver(), cleanup: async () => {} }), {
  largeFileBytes: 16 * 1024 * 1024,
  maxMemoryGrowthBytes: null,
});
