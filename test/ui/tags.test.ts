/**
 * Push times and sorting in the web interface, in a real browser: a tag's last push is its link's
 * modification time (set here on the filesystem, so the expected figures are known), a
 * repository's last push the newest of its tags' (not looked up beyond 100 tags); tags sorted by
 * any column over the whole list, page after page (over the first 1,000 by name, and said so).
 */
import assert from 'node:assert/strict';
import { utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, putManifest } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

/** sets when `tag` of `name` was last pushed, as the filesystem driver stores it */
async function pushedAt(registry: TestRegistry, name: string, tag: string, at: string): Promise<void> {
  const link = join(registry.root!, 'docker/registry/v2/repositories', name, '_manifests/tags', tag, 'current/link');
  await utimes(link, new Date(at), new Date(at));
}

const SORTED = Array.from({ length: 30 }, (_, i) => ({ tag: `t${String(i).padStart(2, '0')}`, layerSize: 100 + 10 * ((i * 7) % 30), pushed: new Date(Date.UTC(2026, 0, 1, 0, (i * 11) % 30)).toISOString() }));

/** the tags in the order (value, then name) */
const orderBy = <T>(rows: { tag: string; value: T }[], desc = false) =>
  [...rows].sort((a, b) => (a.value === b.value ? (a.tag < b.tag ? -1 : 1) : (a.value < b.value) !== desc ? -1 : 1)).map((r) => r.tag);

describe('web interface: push times and sorting', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  let sizes: { tag: string; value: number }[];

  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    // storage's push times (the links' modification times) and the sort over the first 1,000:
    // the interface without the metadata index (with it: test/ui/indexed.test.ts)
    registry = await startBerth({ metadata: { enabled: false } });
    const image = buildImage('oci-manifest', { layers: 1, layerSize: 100 });
    for (const [tag, at] of [['a', '2026-01-05T10:00:00Z'], ['b', '2026-03-01T12:30:00Z'], ['c', '2026-02-01T08:15:00Z']]) {
      await pushImageOK(registry.url, 'times/app', image, tag);
      await pushedAt(registry, 'times/app', tag, at);
    }
    await pushImageOK(registry.url, 'times/other', image, 'x');
    await pushedAt(registry, 'times/other', 'x', '2025-12-24T18:00:00Z');
    await pushImageOK(registry.url, 'times/wide', image, 't000');
    for (let i = 1; i <= 100; i++) assert.equal((await putManifest(registry.url, 'times/wide', `t${String(i).padStart(3, '0')}`, image.body, image.mediaType)).status, 201);
    sizes = [];
    for (const { tag, layerSize, pushed } of SORTED) {
      const built = await pushImageOK(registry.url, 'sort/app', buildImage('oci-manifest', { layers: 1, layerSize }), tag);
      await pushedAt(registry, 'sort/app', tag, pushed);
      sizes.push({ tag, value: built.blobs.reduce((sum, b) => sum + b.size, 0) });
    }
    // 1,001 tags: sorting by a column other than the name looks at the first 1,000
    await pushImageOK(registry.url, 'sort/huge', image, 'h0000');
    const put = (i: number) => putManifest(registry.url, 'sort/huge', `h${String(i).padStart(4, '0')}`, image.body, image.mediaType);
    for (let i = 1; i <= 1000; i += 10) for (const res of await Promise.all(Array.from({ length: 10 }, (_, k) => put(i + k)))) assert.equal(res.status, 201);
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('shows each repository\'s last push, the newest of its tags\', and says why it is missing beyond 100 tags', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/?q=times/`);
    await page.locator('table.list tbody tr').nth(2).waitFor();
    assert.deepEqual(await page.locator('table.list thead th').allInnerTexts(), ['Repository', 'Tags', 'Last push']);
    const row = (name: string) => page.locator('table.list tbody tr', { has: page.getByRole('link', { name, exact: true }) }).locator('td');
    assert.deepEqual(await row('times/app').allInnerTexts(), ['times/app', '3', '2026-03-01 12:30']);
    assert.deepEqual(await row('times/other').allInnerTexts(), ['times/other', '1', '2025-12-24 18:00']);
    assert.deepEqual(await row('times/wide').allInnerTexts(), ['times/wide', '101', '–']);
    assert.equal(await row('times/wide').nth(2).locator('span').getAttribute('title'), "not looked up for more than 100 tags: see the repository's tags");

    // each tag's own push in the repository's page
    await row('times/app').getByRole('link').click();
    await page.waitForURL(`${registry.url}/ui/repositories/times/app`);
    await page.locator('table.list tbody tr').nth(2).waitFor();
    const pushed = await page.locator('table.list tbody tr td:nth-child(7)').allInnerTexts();
    assert.deepEqual(pushed, ['2026-01-05 10:00', '2026-03-01 12:30', '2026-02-01 08:15']);
    assert.deepEqual(problems, []);
  });

  it('sorts the tags by size, then by last push, over every page, not only the page shown', async () => {
    const { page, problems } = await openPage(browser);
    const shownTags = async () => {
      await page.locator('table.list tbody tr').first().waitFor();
      return page.locator('table.list tbody tr td:first-child').allInnerTexts();
    };
    /** the tags of this page and the next, following the pager */
    const twoPages = async () => {
      const first = await shownTags();
      assert.equal(first.length, 25);
      await page.getByRole('link', { name: 'Next page' }).click();
      await page.waitForURL(/from=25/);
      await page.waitForFunction(() => document.querySelectorAll('table.list tbody tr').length === 5);
      const second = await shownTags();
      assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);
      return [...first, ...second];
    };
    await page.goto(`${registry.url}/ui/repositories/sort/app`);
    await page.getByText('30 tags', { exact: true }).waitFor();
    await page.getByRole('link', { name: 'Size' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/sort/app?sort=size`);
    assert.equal(await page.locator('th[aria-sort="ascending"]').innerText(), 'Size ↑');
    assert.deepEqual(await twoPages(), orderBy(sizes));

    await page.getByRole('link', { name: 'First page' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/sort/app?sort=size`);
    await page.getByRole('link', { name: 'Size ↑' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/sort/app?sort=size&desc=1`);
    await page.locator('th[aria-sort="descending"]').waitFor();
    assert.deepEqual(await twoPages(), orderBy(sizes, true));

    await page.goto(`${registry.url}/ui/repositories/sort/app`);
    await page.getByRole('link', { name: 'Pushed' }).click();
    await page.waitForURL(/sort=pushed$/);
    const byPush = orderBy(SORTED.map(({ tag, pushed }) => ({ tag, value: pushed })));
    assert.deepEqual(await twoPages(), byPush);
    // the URL of a sorted page survives a reload
    await page.reload();
    assert.deepEqual(await shownTags(), byPush.slice(25));
    assert.deepEqual(await page.locator('table.list tbody tr td:nth-child(7)').allInnerTexts(), SORTED.filter((s) => byPush.slice(25).includes(s.tag)).map((s) => s.pushed.slice(0, 16).replace('T', ' ')).sort());
    assert.deepEqual(problems, []);
  });

  it('sorts by build time and name through the helper, page after page; an unknown column is refused', async () => {
    const all = async (query: string) => {
      const seen: { tag: string; created?: string }[] = [];
      let next: Record<string, string> | undefined = {};
      while (next) {
        const res: Response = await fetch(`${registry.url}/ui/api/repositories/sort/app/tags/list?n=7&${query}&${new URLSearchParams(next)}`);
        assert.equal(res.status, 200);
        const body = (await res.json()) as { tags: { tag: string; created?: string }[]; next?: Record<string, string>; sortedAmong?: number };
        assert.equal(body.sortedAmong, undefined);
        seen.push(...body.tags);
        next = body.next;
      }
      return seen;
    };
    const created = await all('sort=created');
    assert.deepEqual(created.map((t) => t.tag).sort(), SORTED.map((s) => s.tag));
    for (let i = 1; i < created.length; i++) assert.ok(created[i - 1].created! <= created[i].created!, `${created[i - 1].created} > ${created[i].created}`);
    assert.deepEqual((await all('desc=1')).map((t) => t.tag), SORTED.map((s) => s.tag).reverse());
    const bad = await fetch(`${registry.url}/ui/api/repositories/sort/app/tags/list?sort=colour`);
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { errors: { message: string }[] }).errors[0].message, /cannot be sorted by "colour"; sort by one of tag, digest/);
  });

  it('sorts a repository of more than 1,000 tags over the first 1,000 by name, and says so', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/sort/huge?sort=size&desc=1`);
    await page.locator('table.list tbody tr').first().waitFor();
    assert.equal(
      await page.locator('p.muted').first().innerText(),
      '1001 tags; sorted by size among the first 1,000 by name only (the others are not on these pages: sort by tag to see every tag)',
    );
    const seen = new Set<string>();
    for (let from = 0; from < 1100; from += 100) {
      const body = (await (await fetch(`${registry.url}/ui/api/repositories/sort/huge/tags/list?n=100&sort=size&from=${from}`)).json()) as { tags: { tag: string }[]; sortedAmong: number; total: number };
      assert.deepEqual([body.sortedAmong, body.total], [1000, 1001]);
      for (const { tag } of body.tags) seen.add(tag);
    }
    assert.equal(seen.size, 1000);
    assert.ok(!seen.has('h1000'));
    await page.getByRole('link', { name: 'sort by tag' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/sort/huge`);
    assert.deepEqual((await page.locator('table.list tbody tr td:first-child').allInnerTexts()).slice(0, 2), ['h0000', 'h0001']);
    assert.deepEqual(problems, []);
  });

  it('the list helper sends the push time in full, and a new push moves it', async () => {
    const list = async () => ((await (await fetch(`${registry.url}/ui/api/repositories?q=times/other`)).json()) as { repositories: { pushed?: string }[]; pushLookup: number });
    const before = await list();
    assert.equal(before.pushLookup, 100);
    assert.equal(before.repositories[0].pushed, '2025-12-24T18:00:00.000Z');
    const start = Date.now();
    await pushImageOK(registry.url, 'times/other', buildImage('oci-manifest', { layers: 1, layerSize: 50 }), 'y');
    const moved = Date.parse((await list()).repositories[0].pushed!);
    assert.ok(moved >= start - 2000 && moved <= Date.now() + 2000, `last push ${new Date(moved).toISOString()}`);
  });
});
