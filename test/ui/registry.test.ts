/**
 * The registry page in a real browser: version, storage driver, modes, health, the notification
 * endpoints with their delivery counters (never their URLs), garbage-collection figures; and who
 * may see it (registry:catalog:*).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth } from '../helpers/berth.js';
import { pushBlob } from '../helpers/blobs.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { startReceiver } from '../helpers/receiver.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';
import { VERSION } from '../../src/version.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('web interface: the registry page', needBrowser(), () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  it('shows version, driver, modes, health, notification counters and gc figures', async () => {
    const receiver = await startReceiver();
    const registry = await startBerth({
      notifications: { endpoints: [{ name: 'audit-hook', url: `${receiver.url}/hook?secret=abc`, timeout: '2s', threshold: 3, backoff: '1s' }] },
      storage: { maintenance: { gc: { enabled: true, interval: '1h' } } },
    }, { driver: 'inmemory' });
    try {
      await pushImageOK(registry.url, 'team/app', buildImage('oci-manifest', { layers: 1 }), 'v1');
      await receiver.waitFor(() => receiver.delivered().length >= 3, 10_000, 'the push events');

      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/`);
      await page.getByRole('link', { name: 'Registry', exact: true }).click();
      await page.waitForURL(`${registry.url}/ui/registry`);
      const about = page.locator('#about');
      await about.waitFor();
      const facts = await about.innerText();
      for (const fact of [`Version\tberth ${VERSION}`, 'Storage driver\tinmemory', 'Authentication\tnone', 'Read-only\tno', 'Deletes enabled\tyes', 'Mirror\tno', 'Health\tready']) {
        assert.ok(facts.replace(/\n/g, '\t').includes(fact), `${fact} in ${facts}`);
      }
      const row = page.locator('#notifications tbody tr');
      const headers = await page.locator('#notifications thead th').allInnerTexts();
      assert.deepEqual(headers, ['Endpoint', 'pending', 'events', 'successes', 'failures', 'errors', 'dropped', 'Answers']);
      const cells = await row.locator('td').allInnerTexts();
      assert.equal(cells[0], 'audit-hook');
      assert.equal(Number(cells[2]), receiver.delivered().length);
      assert.equal(Number(cells[3]), receiver.delivered().length);
      assert.match(cells[7], /^200 OK: \d+$/);
      assert.doesNotMatch(await page.locator('main').innerText(), /secret=abc|127\.0\.0\.1:\d+\/hook/, 'endpoint URLs are not shown');
      const gc = await page.locator('#figures-gc').innerText();
      assert.match(gc, /runs\s+0/);
      assert.match(gc, /last bytes freed\s+0 B/);
      assert.match(gc, /last finished\s+never/);
      assert.deepEqual(problems, []);
    } finally {
      await registry.stop();
      await receiver.close();
    }
  });

  it('shows figures in human units: sizes in KiB, durations, the last run as a date', async () => {
    const registry = await startBerth({ storage: { maintenance: { gc: { enabled: true, interval: '200ms', delay: '100ms' } } } });
    try {
      const orphan = buildImage('docker-v2', { layerSize: 4096 });
      for (const blob of orphan.blobs) assert.equal((await pushBlob(registry.url, 'team/orphan', blob.data, blob.digest)).status, 201);
      const trashed = orphan.blobs.reduce((n, b) => n + b.size, 0);
      let gc: Record<string, number> = {};
      for (const deadline = Date.now() + 20_000; Date.now() < deadline && !(gc.lastBytesTrashed > 0); await sleep(100)) {
        gc = ((await (await fetch(`${registry.url}/ui/api/registry`)).json()) as { figures: { gc: Record<string, number> } }).figures.gc;
      }
      assert.equal(gc.lastBytesTrashed, trashed, JSON.stringify(gc));

      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/registry`);
      const figures = page.locator('#figures-gc');
      await figures.waitFor();
      const text = await figures.innerText();
      assert.match(text, new RegExp(`last bytes trashed\\s+${(trashed / 1024).toFixed(1).replace('.', '\\.')} KiB`), text);
      assert.equal(await figures.locator('dd span[title$=" bytes"]').first().getAttribute('title'), `${gc.lastBytesFreed} bytes`);
      assert.match(text, /last duration\s+\d+(\.\d)? (ms|s)\n/);
      assert.match(text, /last finished\s+\d{4}-\d\d-\d\d \d\d:\d\d/);
      assert.doesNotMatch(text, /seconds/);
      assert.deepEqual(problems, []);
    } finally {
      await registry.stop();
    }
  });

  it('is served to those who may read the catalog: anonymous under htpasswd is challenged', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-ui-registry-'));
    try {
      await writeHtpasswd(join(dir, 'htpasswd'), { ops: 'ops-pw' });
      const registry = await startBerth({ auth: { htpasswd: { realm: 'r', path: join(dir, 'htpasswd') } } });
      try {
        const anonymous = await fetch(`${registry.url}/ui/api/registry`);
        assert.equal(anonymous.status, 401);
        const ops = await fetch(`${registry.url}/ui/api/registry`, { headers: { authorization: basic('ops', 'ops-pw') } });
        assert.equal(ops.status, 200);
        const body = (await ops.json()) as { driver: string; auth: string; healthy: boolean; notifications: unknown[] };
        assert.equal(body.driver, 'filesystem');
        assert.equal(body.auth, 'htpasswd');
        assert.equal(body.healthy, true);
        assert.deepEqual(body.notifications, []);
      } finally {
        await registry.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
