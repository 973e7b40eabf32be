/**
 * `berth config schema` (the configuration's JSON Schema, checked with ajv against the example
 * configuration and a typo) and `berth uploads purge` (old uploads removed on demand, young ones
 * kept, a dry run removing nothing, bad arguments exiting 2).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';

const run = promisify(execFile);
const cli = ['--import', 'tsx', 'src/cli.ts'];
const HOUR = 3_600_000;

describe('berth config schema', () => {
  it('prints a JSON Schema that the example configuration satisfies and a typo does not', async () => {
    const { stdout } = await run(process.execPath, [...cli, 'config', 'schema'], { timeout: 30_000 });
    const schema = JSON.parse(stdout) as Record<string, unknown>;
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema');
    const validate = new Ajv2020({ strict: false }).compile(schema);
    const example = parse(await readFile('contrib/config.yml', 'utf8')) as Record<string, unknown>;
    assert.ok(validate(example), JSON.stringify(validate.errors));
    const typo = { ...example, stroage: { filesystem: { rootdirectory: '/x' } } };
    assert.equal(validate(typo), false);
    assert.ok(validate.errors?.some((e) => e.keyword === 'additionalProperties' && (e.params as { additionalProperty?: string }).additionalProperty === 'stroage'), JSON.stringify(validate.errors));
    const badLevel = { ...example, log: { level: 'loud' } };
    assert.equal(validate(badLevel), false);
  });
});

describe('berth uploads purge', () => {
  let dir: string;
  let config: string;
  const uploads = () => join(dir, 'root/docker/registry/v2/repositories/team/app/_uploads');

  /** an upload directory as berth writes it, started `ageMs` ago */
  const plant = async (uuid: string, ageMs: number) => {
    const upload = join(uploads(), uuid);
    await mkdir(upload, { recursive: true });
    await writeFile(join(upload, 'startedat'), new Date(Date.now() - ageMs).toISOString());
    await writeFile(join(upload, 'data'), 'partial');
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-purge-cli-'));
    config = join(dir, 'config.yml');
    await writeFile(config, `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'root')}\n  maintenance:\n    uploadpurging:\n      age: 2h\n`);
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('purges uploads older than --older-than (or the configured age), keeps young ones; --dry-run removes nothing', async () => {
    await plant('three-hours', 3 * HOUR);
    await plant('ninety-minutes', 1.5 * HOUR);
    await plant('just-now', 0);

    const dry = await run(process.execPath, [...cli, 'uploads', 'purge', '--dry-run', '--older-than', '1h', config], { timeout: 30_000 });
    assert.match(dry.stdout, /would purge 2 uploads started before /);
    assert.equal((await readdir(uploads())).length, 3, 'a dry run removes nothing');

    const configured = await run(process.execPath, [...cli, 'uploads', 'purge', config], { timeout: 30_000 });
    assert.match(configured.stdout, /purged .*\/_uploads\/three-hours\n/);
    assert.match(configured.stdout, /^purged 1 uploads started before /m);
    assert.deepEqual((await readdir(uploads())).sort(), ['just-now', 'ninety-minutes']);

    await run(process.execPath, [...cli, 'uploads', 'purge', '--older-than=1h', config], { timeout: 30_000 });
    assert.deepEqual(await readdir(uploads()), ['just-now']);
  });

  it('an upload without startedat is judged by its data time', async () => {
    const upload = join(uploads(), 'no-startedat');
    await mkdir(upload, { recursive: true });
    await writeFile(join(upload, 'data'), 'x');
    const old = new Date(Date.now() - 3 * HOUR);
    await utimes(join(upload, 'data'), old, old);
    await run(process.execPath, [...cli, 'uploads', 'purge', config], { timeout: 30_000 });
    assert.ok(!(await readdir(uploads())).includes('no-startedat'));
  });

  it('bad arguments exit 2 and say what is wrong', async () => {
    for (const [args, message] of [
      [['--older-than', 'soon', config], /--older-than needs a duration such as 1h or 30m, got soon/],
      [['--sideways', config], /unknown flag --sideways/],
    ] as const) {
      await assert.rejects(run(process.execPath, [...cli, 'uploads', 'purge', ...args], { timeout: 30_000 }), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, message);
        return true;
      });
    }
  });
});
