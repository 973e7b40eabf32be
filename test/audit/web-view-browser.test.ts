/**
 * The audit page in a real browser (/ui/audit): the records newest first, the filters applied
 * from the form and kept in the URL, no console error.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { FLUSH_MS } from '../../src/audit/sink.js';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: the audit page', needBrowser(), () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  it('lists the records and filters them by repository, actor and action', async () => {
    const clock = new ManualClock();
    const registry = await startBerth({}, { clock });
    try {
      await pushImageOK(registry.url, 'team/a', buildImage('oci-manifest', { layers: 1 }), 'v1');
      await pushImageOK(registry.url, 'team/b', buildImage('oci-manifest', { layers: 1 }), 'v2');
      await clock.advance(FLUSH_MS);
      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/`);
      await page.getByRole('link', { name: 'Audit', exact: true }).click();
      await page.waitForURL(`${registry.url}/ui/audit`);
      const rows = page.locator('table.audit tbody tr');
      await rows.first().waitFor();
      const all = await rows.allInnerTexts();
      assert.ok(all.some((r) => r.includes('team/a') && r.includes('v1')), all.join('\n'));
      assert.ok(all.some((r) => r.includes('team/b') && r.includes('v2')), all.join('\n'));
      assert.ok(all.some((r) => r.includes('policy.change')), all.join('\n'));

      await page.getByLabel('Repository').fill('team/b');
      await page.getByLabel('Action').fill('push');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(`${registry.url}/ui/audit?repository=team%2Fb&action=push`);
      // the filtered rows, not the empty table between two renders (every() of no rows is true)
      await page.waitForFunction(() => {
        const shown = [...document.querySelectorAll('table.audit tbody tr')];
        return shown.length >= 2 && shown.every((tr) => tr.textContent?.includes('team/b'));
      });
      const filtered = await rows.allInnerTexts();
      assert.ok(filtered.length >= 2, filtered.join('\n'));
      assert.ok(filtered.every((r) => r.includes('team/b') && r.includes('push') && !r.includes('team/a')), filtered.join('\n'));
      assert.deepEqual(problems, []);
    } finally {
      await registry.stop();
    }
  });
});
