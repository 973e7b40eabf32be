/**
 * The web interface as people use it: light and dark from the system's choice, a phone's width
 * without sideways scrolling, and the keyboard alone (search, links, the delete dialog).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

const background = (page: Page) => page.evaluate(() => getComputedStyle(document.body).backgroundColor);

describe('web interface: light, dark, phone, keyboard', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth();
    const image = await pushImageOK(registry.url, 'platform/very-long-repository-name-for-a-narrow-screen', buildImage('oci-index'), 'release-2026.11.23');
    await pushImageOK(registry.url, 'platform/very-long-repository-name-for-a-narrow-screen', buildImage('oci-artifact', { subject: image.children[0] }));
    await pushImageOK(registry.url, 'tools/cli', buildImage('oci-manifest'), 'v1');
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('follows the system: light and dark colours', async () => {
    const light = await openPage(browser, { colorScheme: 'light' });
    await light.page.goto(`${registry.url}/ui/`);
    await light.page.locator('table.list').waitFor();
    assert.equal(await background(light.page), 'rgb(255, 255, 255)');
    const dark = await openPage(browser, { colorScheme: 'dark' });
    await dark.page.goto(`${registry.url}/ui/`);
    await dark.page.locator('table.list').waitFor();
    assert.equal(await background(dark.page), 'rgb(20, 23, 26)');
    const text = await dark.page.evaluate(() => getComputedStyle(document.body).color);
    assert.equal(text, 'rgb(227, 231, 235)');
  });

  it('fits a phone: no page scrolls sideways', async () => {
    const { page, problems } = await openPage(browser, { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true });
    const name = 'platform/very-long-repository-name-for-a-narrow-screen';
    for (const [path, ready] of [
      ['/ui/', 'table.list'],
      [`/ui/repositories/${name}`, 'table.list tbody tr'],
      [`/ui/repositories/${name}/manifests/release-2026.11.23`, '#platforms'],
      ['/ui/registry', '#about'],
    ]) {
      await page.goto(`${registry.url}${path}`);
      await page.locator(ready).first().waitFor();
      const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
      assert.ok(scroll <= width, `${path}: the page is ${scroll}px wide on a ${width}px screen`);
    }
    assert.deepEqual(problems, []);
  });

  it('works with the keyboard alone: / to search, Tab and Enter to follow, Escape to close the delete dialog', async () => {
    const { page } = await openPage(browser);
    await page.goto(`${registry.url}/ui/`);
    await page.locator('table.list').waitFor();
    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'search');
    await page.keyboard.type('cli');
    await page.waitForURL(/\?q=cli$/);
    // the search's own answer, not the full list still showing
    await page.locator('table.list tbody tr:only-child', { hasText: 'tools/cli' }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'tools/cli');
    await page.keyboard.press('Enter');
    await page.waitForURL(`${registry.url}/ui/repositories/tools/cli`);
    await page.getByRole('link', { name: 'v1', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL(`${registry.url}/ui/repositories/tools/cli/manifests/v1`);
    const button = page.getByRole('button', { name: 'Delete this manifest…' });
    await button.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor();
    // the safe choice has the focus
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Cancel');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    assert.equal((await fetch(`${registry.url}/v2/tools/cli/manifests/v1`, { method: 'HEAD' })).status, 200);
    // every focusable thing shows where the focus is
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    assert.equal(outline, 'solid');
  });
});
