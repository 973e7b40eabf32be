import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { noSchemaCompilers } from '../../src/http/no-schemas.js';
import { REPO_ROOT } from '../helpers/berth-process.js';

describe('Fastify without JSON-schema compilers (src/http/no-schemas.ts)', () => {
  it('serves routes without a schema', async () => {
    const app = Fastify({ schemaController: noSchemaCompilers });
    app.get('/x', async () => ({ ok: true }));
    try {
      const res = await app.inject({ url: '/x' });
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.json(), { ok: true });
    } finally {
      await app.close();
    }
  });

  it('refuses a route with a schema, naming the reason', async () => {
    const app = Fastify({ schemaController: noSchemaCompilers });
    app.post('/x', { schema: { body: { type: 'object' } } }, async () => 'x');
    await assert.rejects(async () => app.ready(), /berth routes take no JSON schema/);
    await app.close().catch(() => undefined);
  });

  it('keeps ajv and the fast-json-stringify compiler out of a fresh process', () => {
    // a child: this test process may have loaded them for other reasons
    const run = (options: string) => {
      const script = `
        import { createRequire } from 'node:module';
        import Fastify from 'fastify';
        import { noSchemaCompilers } from './src/http/no-schemas.ts';
        const app = Fastify(${options});
        app.get('/', async () => 'x');
        await app.ready();
        const loaded = Object.keys(createRequire(import.meta.url).cache);
        console.log(JSON.stringify(loaded.filter((k) => /node_modules\\/(ajv\\/|fast-json-stringify\\/index)/.test(k))));
        await app.close();
        void noSchemaCompilers;`;
      const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
      assert.equal(child.status, 0, child.stderr);
      return JSON.parse(child.stdout) as string[];
    };
    assert.deepEqual(run('{ schemaController: noSchemaCompilers }'), []);
    // the check can fail: Fastify's default compilers load them
    assert.ok(run('{}').length > 0, 'the default compilers no longer load ajv: this test checks nothing');
  });
});
