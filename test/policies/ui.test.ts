/** The web interface's registry page shows each quota with its use, in a real browser. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: quotas on the registry page', needBrowser(), () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  it('lists the quota, its use and its limits', async () => {
    const registry = await startBerth({ policies: [{ repositories: ['team/**'], quota: { bytes: '10MiB', repositories: 4 } }] });
    try {
      await pushImageOK(registry.url, 'team/app', buildImage('oci-manifest', { layers: 1 }), 'v1');
      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/registry`);
      const table = page.locator('#quotas');
      await table.waitFor();
      assert.deepEqual(await table.locator('thead th').allInnerTexts(), ['Repositories', 'Size used', 'Size allowed', 'Repositories used', 'Repositories allowed']);
      const cells = await table.locator('tbody tr td').allInnerTexts();
      assert.equal(cells[0], 'team/**');
      assert.match(cells[1], /KiB \(0 %\)$/);
      assert.equal(cells[2], '10 MiB');
      assert.equal(cells[3], '1 (25 %)');
      assert.equal(cells[4], '4');
      assert.deepEqual(problems, []);
    } finally {
      await registry.stop();
    }
  });
});
