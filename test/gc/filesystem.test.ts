// `berth garbage-collect` on the filesystem, the command in a child process: see scenarios.ts.
import { describeCollection } from './scenarios.js';

describeCollection('filesystem');
