// berth's and Distribution's collections on one filesystem root: see shared-root.ts.
import { describeSharedRoot } from './shared-root.js';
import { needTools } from '../helpers/tools.js';

describeSharedRoot('filesystem', async () => ({ kind: 'filesystem', ref: {}, berth: {} }), needTools(['docker-registry'], 'the shared-root collection tests'));
