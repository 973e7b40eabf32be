// The collection's core on the in-memory driver, in this process (fast): see scenarios.ts.
import { describeCollection } from './scenarios.js';

describeCollection('inmemory');
