/**
 * The processes of http.workers share one SQLite file: they open (and migrate) it at the same
 * moment, and write one repository's tags at once without losing an entry of its history.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openDatabase } from '../../src/metadata/open.js';
import { MetadataIndex } from '../../src/metadata/metadata-index.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '../..');
const PROCESSES = 3;
const MOVES = 20;

/** a process that opens the file and moves tag `t` of `shared/app` MOVES times, to digests of its own */
const WRITER = `
import { openDatabase } from './src/metadata/open.ts';
import { MetadataIndex } from './src/metadata/metadata-index.ts';
const [path, who] = process.argv.slice(-2);
const { db, engine } = await openDatabase({ sqlite: { path } });
const index = new MetadataIndex(db, engine);
for (let i = 0; i < ${MOVES}; i++) await index.tagMoved('shared/app', 't', 'sha256:' + who + String(i).padStart(63, '0'));
await index.close();
`;

describe('one SQLite file shared by several processes', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-sqlite-shared-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is migrated once when they open it together, and keeps every move of a tag they write at once', async () => {
    const path = join(dir, 'metadata.sqlite');
    await Promise.all(Array.from({ length: PROCESSES }, (_, who) => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', WRITER, path, String(who)], { cwd: ROOT })));
    const { db, engine } = await openDatabase({ sqlite: { path } });
    const index = new MetadataIndex(db, engine);
    try {
      const history = await index.tagHistory('shared/app', 't');
      // every move changed the digest, so each opened an entry; exactly one is still open, the tag's current digest
      assert.equal(history.length, PROCESSES * MOVES);
      const open = history.filter((h) => h.to === null);
      assert.equal(open.length, 1);
      const rows = await index.readRepository('shared/app');
      assert.deepEqual(rows?.tags.map((t) => t.digest), [open[0].digest]);
    } finally {
      await index.close();
    }
  });
});
