/**
 * Push times in the web interface, in a real browser: a tag's last push is its link's modification
 * time (set here on the filesystem, so the expected figures are known), a repository's last push
 * the newest of its tags' (not looked up beyond 100 tags).
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

describe('web interface: push times', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;

  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth();
    const image = buildImage('oci-manifest', { layers: 1, layerSize: 100 });
    for (const [tag, at] of [['a', '2026-01-05T10:00:00Z'], ['b', '2026-03-01T12:30:00Z'], ['c', '2026-02-01T08:15:00Z']]) {
      await pushImageOK(registry.url, 'times/app', image, tag);
      await pushedAt(registry, 'times/app', tag, at);
    }
    await pushImageOK(registry.url, 'times/other', image, 'x');
    await pushedAt(registry, 'times/other', 'x', '2025-12-24T18:00:00Z');
    await pushImageOK(registry.url, 'times/wide', image, 't000');
    for (let i = 1; i <= 100; i++) assert.equal((await putManifest(registry.url, 'times/wide', `t${String(i).padStart(3, '0')}`, image.body, image.mediaType)).status, 201);
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
