/**
 * The filtered catalog costs in proportion to what it reads: a user who may see a few of 3,000
 * repositories asks `/v2/_catalog?n=1` page after page. Before, each page walked the catalog one
 * name at a time (one walk per invisible name: quadratic); now it reads growing chunks. Checked by
 * the storage listings the whole walk makes (Prometheus' storage call count), not by time.
 * One request reads at most SCAN_BUDGET names: a shorter page with a sealed Link follows.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { SCAN_BUDGET } from '../../src/registry/visible-catalog.js';

const REPOSITORIES = 3000;
const VISIBLE = ['r00100', 'r01500', 'r02999'].map((name) => `team/${name}`);

describe('the filtered catalog of a user who may see few repositories', () => {
  let dir: string;
  let registry: TestRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-catalog-'));
    const root = join(dir, 'root');
    for (let i = 0; i < REPOSITORIES; i++) await mkdir(join(root, 'docker/registry/v2/repositories/team', `r${String(i).padStart(5, '0')}`, '_manifests'), { recursive: true });
    await writeHtpasswd(join(dir, 'htpasswd'), { few: 'few-pw' });
    registry = await startBerth(
      {
        auth: { htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') }, access: Object.fromEntries(VISIBLE.map((name) => [name, { few: ['pull'] }])) },
        http: { debug: { addr: '127.0.0.1:0', prometheus: { enabled: true } } },
      },
      { root },
    );
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const listings = async () => {
    const metrics = await (await fetch(`${registry.app.debugURL}/metrics`)).text();
    const line = metrics.split('\n').find((l) => l.startsWith('berth_storage_operation_duration_seconds_count{') && l.includes('operation="listnames"') && l.includes('outcome="ok"'));
    return Number(line?.split(' ').pop() ?? 0);
  };

  it('pages through n=1 to the three it may see, with a few more listings than there are repositories', async () => {
    const before = await listings();
    const seen: string[] = [];
    let url: string | undefined = `${registry.url}/v2/_catalog?n=1`;
    for (let pages = 0; url && pages < 10; pages++) {
      const res: Response = await fetch(url, { headers: { authorization: basic('few', 'few-pw') } });
      assert.equal(res.status, 200);
      seen.push(...((await res.json()) as { repositories: string[] }).repositories);
      const link = res.headers.get('link');
      url = link ? new URL(/<([^>]+)>/.exec(link)![1], registry.url).toString() : undefined;
    }
    assert.deepEqual(seen, VISIBLE);
    const made = (await listings()) - before;
    // each page walks from its `last` once, in chunks: about one listing per repository per page
    // (three pages and the end); one walk per name, as before, made millions
    console.log(`# filtered catalog: ${made} listings for ${REPOSITORIES} repositories over ${seen.length + 1} pages`);
    assert.ok(made < 5 * REPOSITORIES, `${made} listings for ${REPOSITORIES} repositories`);
  });
});

describe('one filtered catalog request reads at most its scan budget', () => {
  const TOTAL = SCAN_BUDGET + 2000;
  const name = (i: number) => `big/r${String(i).padStart(6, '0')}`;
  const early = name(100);
  const late = name(TOTAL - 1);
  let dir: string;
  let registry: TestRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-catalog-budget-'));
    const root = join(dir, 'root');
    const repositories = join(root, 'docker/registry/v2/repositories');
    for (let i = 0; i < TOTAL; i += 500) {
      await Promise.all(Array.from({ length: Math.min(500, TOTAL - i) }, (_, k) => mkdir(join(repositories, name(i + k), '_manifests'), { recursive: true })));
    }
    await writeHtpasswd(join(dir, 'htpasswd'), { both: 'pw', lateonly: 'pw' });
    registry = await startBerth(
      { auth: { htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') }, access: { [early]: { both: ['pull'] }, [late]: { both: ['pull'], lateonly: ['pull'] } } } },
      { root },
    );
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** the pages a user gets following Link headers, with each Link's `last` */
  async function walk(user: string): Promise<{ pages: string[][]; lasts: string[] }> {
    const pages: string[][] = [];
    const lasts: string[] = [];
    let url: string | undefined = `${registry.url}/v2/_catalog?n=1`;
    while (url && pages.length < 10) {
      const res: Response = await fetch(url, { headers: { authorization: basic(user, 'pw') } });
      assert.equal(res.status, 200);
      pages.push(((await res.json()) as { repositories: string[] }).repositories);
      const link = res.headers.get('link');
      url = link ? new URL(/<([^>]+)>/.exec(link)![1], registry.url).toString() : undefined;
      if (url) lasts.push(new URL(url).searchParams.get('last')!);
    }
    return { pages, lasts };
  }

  it(`answers a shorter page with a sealed Link instead of reading past ${SCAN_BUDGET} names, and reveals no hidden name`, async () => {
    const both = await walk('both');
    assert.deepEqual(both.pages, [[early], [late]], 'the first page stops at the budget with one name; the second finds the last');
    assert.equal(both.lasts.length, 1);
    assert.match(both.lasts[0], /^~[A-Za-z0-9_-]+$/, 'the Link carries a sealed cursor, not the invisible name it stopped at');
    assert.doesNotMatch(Buffer.from(both.lasts[0].slice(1), 'base64url').toString('latin1'), /big\/r/);
    const lateOnly = await walk('lateonly');
    assert.deepEqual(lateOnly.pages, [[], [late]], 'a page may be empty, with a Link to go on');
  });

  it('bounds the web interface\'s repository search the same way', async () => {
    const ask = async (query: string) => {
      const res = await fetch(`${registry.url}/ui/api/repositories?${query}`, { headers: { authorization: basic('lateonly', 'pw') } });
      assert.equal(res.status, 200);
      return (await res.json()) as { repositories: { name: string }[]; next?: string };
    };
    const first = await ask('n=1&q=big');
    assert.deepEqual(first.repositories, []);
    assert.match(first.next!, /^~/, 'the search stops at the budget with a sealed next');
    const second = await ask(`n=1&q=big&last=${encodeURIComponent(first.next!)}`);
    assert.deepEqual(second.repositories.map((r) => r.name), [late]);
    assert.equal(second.next, undefined);
  });

  it('reads a cursor that does not open as a name past every repository: an empty page', async () => {
    const res = await fetch(`${registry.url}/v2/_catalog?n=5&last=~not-a-cursor`, { headers: { authorization: basic('both', 'pw') } });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { repositories: [] });
    assert.equal(res.headers.get('link'), null);
  });
});
