/**
 * The web interface with the metadata index, in a real browser: the repository list shows size,
 * last push and pulls; a tag list sorts by push time over the whole list (a repository of 1,005
 * tags, the newest pushes beyond the first 1,000 by name) with no "first 1,000" notice; the search
 * box finds tags, digests and label values; the registry page shows storage use per namespace,
 * a layer shared by two repositories counted once. Push times are the index's, on a ManualClock.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, putManifest } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

const MINUTE = 60_000;
const tagName = (i: number) => `h${String(i).padStart(4, '0')}`;

describe('web interface with the metadata index', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'));
  const image = buildImage('oci-manifest', { layers: 1, layerSize: 100 });
  const other = buildImage('oci-manifest', { layers: 1, layerSize: 200 });

  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth({ metadata: {} }, { clock });
    // 1,004 tags at 00:00, h1004 at 00:01, then h0007 moved at 00:02
    await pushImageOK(registry.url, 'sort/huge', image, tagName(0));
    const put = (i: number) => putManifest(registry.url, 'sort/huge', tagName(i), image.body, image.mediaType);
    for (let i = 1; i < 1004; i += 17) for (const res of await Promise.all(Array.from({ length: Math.min(17, 1004 - i) }, (_, k) => put(i + k)))) assert.equal(res.status, 201);
    await clock.advance(MINUTE);
    assert.equal((await put(1004)).status, 201);
    await clock.advance(MINUTE);
    await pushImageOK(registry.url, 'sort/huge', other, tagName(7));
    await pushImageOK(registry.url, 'team/app', image, 'v1');
    await pushImageOK(registry.url, 'team/lib', image, 'v1');
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('shows each repository\'s size, last push and pulls', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/?q=team/`);
    await page.locator('table.list tbody tr').nth(1).waitFor();
    assert.deepEqual(await page.locator('table.list thead th').allInnerTexts(), ['Repository', 'Tags', 'Last push', 'Size', 'Pulls']);
    const cells = page.locator('table.list tbody tr', { has: page.getByRole('link', { name: 'team/app', exact: true }) }).locator('td');
    assert.deepEqual(await cells.allInnerTexts().then((t) => [t[0], t[1], t[2], t[4]]), ['team/app', '1', '2026-01-01 00:02', '0']);
    const bytes = image.blobs.reduce((sum, b) => sum + b.size, 0) + image.body.length;
    assert.equal(await cells.nth(3).getAttribute('title'), `${bytes} bytes`);
    assert.deepEqual(problems, []);
  });

  it('sorts a repository of 1,005 tags by push time over the whole list, page after page, with no "first 1,000" notice', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/sort/huge`);
    await page.getByText('1005 tags', { exact: true }).waitFor();
    await page.getByRole('link', { name: 'Pushed' }).click();
    await page.waitForURL(/sort=pushed$/);
    await page.getByRole('link', { name: 'Pushed ↑' }).click();
    await page.waitForURL(/sort=pushed&desc=1$/);
    await page.locator('th[aria-sort="descending"]').waitFor();
    await page.locator('table.list tbody tr').nth(24).waitFor();
    const first = await page.locator('table.list tbody tr td:first-child').allInnerTexts();
    assert.deepEqual(first.slice(0, 4), [tagName(7), tagName(1004), tagName(1003), tagName(1002)]);
    assert.equal(await page.locator('p.muted').first().innerText(), '1005 tags');
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL(/last=/);
    await page.waitForFunction(() => document.querySelector('table.list tbody tr td')?.textContent === 'h0980');
    assert.deepEqual(problems, []);

    // the helper (the bench's path) pages through every tag in that order
    const seen: string[] = [];
    let next: Record<string, string> | undefined = {};
    while (next) {
      const res: Response = await fetch(`${registry.url}/ui/api/repositories/sort/huge/tags/list?n=100&sort=pushed&desc=1&${new URLSearchParams(next)}`);
      assert.equal(res.status, 200);
      const body = (await res.json()) as { total: number; tags: { tag: string; pushed: string }[]; next?: Record<string, string>; sortedAmong?: number };
      assert.deepEqual([body.total, body.sortedAmong], [1005, undefined]);
      seen.push(...body.tags.map((t) => t.tag));
      next = body.next;
    }
    const rest = Array.from({ length: 1004 }, (_, i) => tagName(i)).filter((t) => t !== tagName(7)).reverse();
    assert.deepEqual(seen, [tagName(7), tagName(1004), ...rest]);
  });

  it('searches tags, digests and label values from the search box', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/`);
    await page.getByLabel('Search repositories').fill('h100');
    await page.waitForURL(/q=h100/);
    await page.locator('#found li').nth(4).waitFor();
    assert.deepEqual(await page.locator('#found li').allInnerTexts(), [0, 1, 2, 3, 4].map((i) => `sort/huge:h100${i} tag`));

    await page.goto(`${registry.url}/ui/?q=berth%20test`);
    await page.locator('#found li').first().waitFor();
    assert.match(await page.locator('#found').innerText(), /label org\.opencontainers\.image\.title=berth test image/);

    const hex = other.digest.slice('sha256:'.length, 'sha256:'.length + 12);
    await page.goto(`${registry.url}/ui/?q=${hex}`);
    await page.locator('#found li').first().waitFor();
    assert.deepEqual(await page.locator('#found li').allInnerTexts(), [`sort/huge@${other.digest.slice(0, 'sha256:'.length + 12)} digest`]);
    await page.locator('#found li a').click();
    await page.waitForURL(`${registry.url}/ui/repositories/sort/huge/manifests/${other.digest}`);
    // the tags naming it come from the index, over all 1,005 tags (not the first 1,000 by name)
    await page.getByText('The tag h0007 goes with it.', { exact: true }).waitFor({ state: 'attached' }); // in the delete confirmation
    assert.deepEqual(problems, []);
  });

  it('shows storage use per top-level namespace on the registry page, a shared layer once', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/registry`);
    await page.locator('#usage tbody tr').nth(1).waitFor();
    const rows = await page.locator('#usage tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.getAttribute('title') ?? td.textContent)));
    const once = image.blobs.reduce((sum, b) => sum + b.size, 0) + image.body.length;
    const huge = once + other.blobs.reduce((sum, b) => sum + b.size, 0) + other.body.length;
    assert.deepEqual(rows, [
      ['sort', '1', `${huge} bytes`],
      ['team', '2', `${once} bytes`],
    ]);
    assert.deepEqual(problems, []);
  });
});
