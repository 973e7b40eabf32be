// berth's and Distribution's collections on one S3 bucket and root directory (Ceph): see shared-root.ts.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { CEPH_TOOLS, sharedCeph, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { describeSharedRoot } from './shared-root.js';

let indexDir: string | undefined;
after(async () => {
  await stopSharedCeph();
  if (indexDir) await rm(indexDir, { recursive: true, force: true });
});
describeSharedRoot(
  's3',
  async () => {
    const { ceph, bucket } = await sharedCeph();
    const params = ceph.params(bucket, { rootdirectory: `/gc-${randomBytes(6).toString('hex')}` });
    // the metadata index on SQLite beside the test (S3 has no default place for it)
    indexDir = await mkdtemp(join(tmpdir(), 'berth-gc-index-'));
    const metadata = { sqlite: { path: join(indexDir, 'metadata.sqlite') } };
    return { kind: 's3', ref: { config: { storage: { filesystem: undefined, s3: { ...params, v4auth: true } } } }, berth: { s3: params, metadata } };
  },
  needTools([...CEPH_TOOLS, 'docker-registry'], 'the shared-bucket collection tests'),
);
