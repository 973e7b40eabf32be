// `berth garbage-collect` on S3 (a Ceph radosgw), the command in a child process: see scenarios.ts.
import { after } from 'node:test';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { describeCollection } from './scenarios.js';

after(() => stopSharedCeph());
describeCollection('s3', needTools(CEPH_TOOLS, 'the S3 garbage-collection tests'));
