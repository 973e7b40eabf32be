/**
 * Forms whose values also live in the URL (the repositories' search box, the audit filters): a
 * key typed while the form's own search comes back as the URL is kept, and only a URL from
 * elsewhere (back, forward) replaces what the form holds. The page's clock is Playwright's, paused:
 * the keys land in the exact moment that lost them before (after the navigation re-rendered the
 * view, before the effects of that render ran, which wait for the next frame), on any machine.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

/** moves the page's paused clock 1 ms at a time until its URL's query is `search` (it then has not drawn a frame since) */
async function runUntilSearch(page: Page, search: string): Promise<void> {
  for (let ms = 0; ms < 2_000; ms++) {
    if ((await page.evaluate(() => location.search)) === search) return;
    await page.clock.runFor(1);
  }
  assert.fail(`the page never navigated to ${search} (it is at ${await page.evaluate(() => location.search)})`);
}

/** a page open at `url` whose clock stands still once it shows `ready` */
async function pausedPage(browser: Browser, url: string, ready: string): Promise<{ page: Page; problems: string[] }> {
  const opened = await openPage(browser);
  await opened.page.clock.install();
  await opened.page.goto(url);
  await opened.page.locator(ready).waitFor();
  await opened.page.clock.pauseAt(Date.now() + 60_000);
  return opened;
}

describe('web interface: typing into a form the URL also holds', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth();
    await pushImageOK(registry.url, 'tools/cli', buildImage('oci-manifest', { layers: 1 }), 'v1');
    await pushImageOK(registry.url, 'platform/base', buildImage('oci-manifest', { layers: 1 }), 'v1');
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('the search box keeps keys typed while its last search comes back; back and forward restore it', async () => {
    const { page, problems } = await pausedPage(browser, `${registry.url}/ui/`, 'table.list');
    const box = page.locator('#search');
    await box.focus();
    await page.keyboard.type('c');
    await page.clock.runFor(200); // less than the pause after which typing searches
    await runUntilSearch(page, '?q=c');
    await page.keyboard.type('li'); // before the next frame: the render for ?q=c has not finished its effects
    assert.equal(await box.inputValue(), 'cli', 'the keys typed after the search for "c" left');
    await page.clock.runFor(1_000);
    await runUntilSearch(page, '?q=cli');
    await page.locator('table.list tbody tr:only-child', { hasText: 'tools/cli' }).waitFor();
    assert.equal(await box.inputValue(), 'cli');

    // Enter keeps the search as a history entry of its own; the next search replaces the one after it
    await page.keyboard.press('Enter');
    await page.clock.runFor(100);
    await box.fill('platform');
    await page.clock.runFor(1_000);
    await runUntilSearch(page, '?q=platform');
    await page.goBack();
    await page.clock.runFor(100);
    assert.equal(await page.evaluate(() => location.search), '?q=cli');
    assert.equal(await box.inputValue(), 'cli', 'the back button brings back the search it left');
    await page.goForward();
    await page.clock.runFor(100);
    assert.equal(await box.inputValue(), 'platform', 'and forward the one after it');
    assert.deepEqual(problems, []);
  });

  it('the audit filters keep keys typed while the filter just applied comes back; back restores them', async () => {
    const { page, problems } = await pausedPage(browser, `${registry.url}/ui/audit`, 'table.audit');
    const repository = page.getByLabel('Repository');
    const actor = page.getByLabel('Actor');
    await repository.fill('tools/cli');
    await repository.press('Enter');
    await runUntilSearch(page, '?repository=tools%2Fcli');
    await actor.focus(); // no frame drawn since the filter was applied: its effects wait
    await page.keyboard.type('anon');
    await page.clock.runFor(100);
    assert.equal(await actor.inputValue(), 'anon', 'the keys typed after the filter was applied left');
    assert.equal(await repository.inputValue(), 'tools/cli');

    await page.goBack();
    await page.clock.runFor(100);
    assert.equal(await page.evaluate(() => location.search), '');
    assert.equal(await repository.inputValue(), '', 'the back button brings back the filters it left');
    assert.equal(await actor.inputValue(), '');
    assert.deepEqual(problems, []);
  });
});
