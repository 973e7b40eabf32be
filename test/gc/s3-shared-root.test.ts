// berth's and Distribution's collections on one S3 bucket and root directory (Ceph): see shared-root.ts.
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import { CEPH_TOOLS, sharedCeph, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { describeSharedRoot } from './shared-root.js';

after(() => stopSharedCeph());
describeSharedRoot(
  's3',
  async () => {
    const { ceph, bucket } = await sharedCeph();
    const params = ceph.params(bucket, { rootdirectory: `/gc-${randomBytes(6).toString('hex')}` });
    return { kind: 's3', ref: { config: { storage: { filesystem: undefined, s3: { ...params, v4auth: true } } } }, berth: { s3: params } };
  },
  needTools([...CEPH_TOOLS, 'docker-registry'], 'the shared-bucket collection tests'),
);
