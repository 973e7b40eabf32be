/**
 * Deleting from the web interface, in a real browser: a confirmation that names what goes with the
 * manifest (its tags, its referrers left behind), Cancel keeps it, Delete removes it through the
 * V2 API; a read-only registry and one with deletes disabled show no delete at all.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK, putManifest } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: delete', needBrowser(), () => {
  let browser: Browser;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => browser?.close());

  it('confirms with what else goes, keeps the manifest on Cancel, and deletes it (and its tags) on Delete', async () => {
    const registry = await startBerth();
    try {
      const image = await pushImageOK(registry.url, 'shop/cart', buildImage('oci-manifest'), 'v1');
      assert.equal((await putManifest(registry.url, 'shop/cart', 'stable', image.body, image.mediaType)).status, 201);
      await pushImageOK(registry.url, 'shop/cart', buildImage('oci-manifest'), 'v2');
      await pushImageOK(registry.url, 'shop/cart', buildImage('oci-artifact', { subject: image }));
      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/repositories/shop/cart/manifests/v1`);
      await page.getByRole('button', { name: 'Delete this manifest…' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.waitFor();
      const text = await dialog.innerText();
      assert.match(text, new RegExp(`Delete shop/cart@${image.digest.slice(0, 19)}`));
      assert.match(text, /The tags stable, v1 go with it\./);
      assert.match(text, /1 referrer \(signatures, SBOMs, attestations\) stay but point at nothing\./);

      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
      assert.equal((await fetch(`${registry.url}/v2/shop/cart/manifests/${image.digest}`, { method: 'HEAD' })).status, 200);

      await page.getByRole('button', { name: 'Delete this manifest…' }).click();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'hidden' });
      assert.equal((await fetch(`${registry.url}/v2/shop/cart/manifests/${image.digest}`, { method: 'HEAD' })).status, 200);

      await page.getByRole('button', { name: 'Delete this manifest…' }).click();
      await dialog.getByRole('button', { name: 'Delete', exact: true }).click();
      await page.waitForURL(`${registry.url}/ui/repositories/shop/cart`);
      await page.getByRole('link', { name: 'v2', exact: true }).waitFor();
      assert.deepEqual(await page.locator('table.list tbody tr td:first-child').allInnerTexts(), ['v2']);
      assert.equal((await fetch(`${registry.url}/v2/shop/cart/manifests/${image.digest}`, { method: 'HEAD' })).status, 404);
      assert.deepEqual(((await (await fetch(`${registry.url}/v2/shop/cart/tags/list`)).json()) as { tags: string[] }).tags, ['v2']);
      assert.deepEqual(problems, []);
    } finally {
      await registry.stop();
    }
  });

  it('shows no delete on a read-only registry or one with deletes disabled', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-ui-delete-'));
    try {
      const seed = await startBerth({}, { root });
      try {
        await pushImageOK(seed.url, 'shop/cart', buildImage('oci-manifest'), 'v1');
      } finally {
        await seed.stop();
      }
      for (const overrides of [{ storage: { maintenance: { readonly: { enabled: true } } } }, { storage: { delete: { enabled: false } } }]) {
        const registry = await startBerth(overrides, { root });
        try {
          const { page } = await openPage(browser);
          await page.goto(`${registry.url}/ui/repositories/shop/cart/manifests/v1`);
          await page.locator('#layers').waitFor();
          assert.equal(await page.getByRole('button', { name: /Delete/ }).count(), 0, JSON.stringify(overrides));
          assert.equal(await page.locator('#delete').count(), 0);
        } finally {
          await registry.stop();
        }
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
