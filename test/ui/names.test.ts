/**
 * Repository names that hold `/manifests/` or `/tags/` (legal in OCI) in the web interface, in a
 * real browser: a path ending in `/manifests/<tag or digest>` is a manifest, the name being all
 * before that last `/manifests/`; a repository whose own name ends so has its page at its name
 * with the last `/` written %2F. The helpers' tag list is `<name>/tags/list`, as in the V2 API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: names holding /manifests/ and /tags/', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  let plain: Image;
  let nested: Image;
  let nightly: Image;

  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth();
    plain = await pushImageOK(registry.url, 'odd', buildImage('oci-manifest', { layers: 1, layerSize: 100 }), 'v1');
    await pushImageOK(registry.url, 'odd', plain, 'tags');
    nested = await pushImageOK(registry.url, 'odd/manifests/v1', buildImage('oci-manifest', { layers: 2, layerSize: 200 }), 'latest');
    nightly = await pushImageOK(registry.url, 'odd/manifests/nightly', buildImage('oci-manifest', { layers: 1, layerSize: 300 }), 'latest');
    await pushImageOK(registry.url, 'odd/manifests', nightly, 'tags');
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('opens the repository odd/manifests/v1 from the list, its tag, and both again after a reload', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/`);
    await page.getByRole('link', { name: 'odd/manifests/v1', exact: true }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/odd/manifests%2Fv1`);
    await page.getByRole('heading', { name: 'odd/manifests/v1' }).waitFor();
    const row = page.locator('table.list tbody tr');
    await row.first().waitFor();
    assert.deepEqual(await page.locator('table.list tbody tr td:first-child').allInnerTexts(), ['latest']);
    assert.equal(await row.locator('td').nth(1).innerText(), nested.digest.slice(0, 19));
    await page.reload();
    await page.getByRole('heading', { name: 'odd/manifests/v1' }).waitFor();
    await row.first().waitFor();
    assert.equal(await row.locator('td').nth(1).innerText(), nested.digest.slice(0, 19));

    await row.getByRole('link', { name: 'latest' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/odd/manifests/v1/manifests/latest`);
    await page.locator('dl.facts').first().waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(nested.digest));
    await page.reload();
    await page.locator('dl.facts').first().waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(nested.digest));
    assert.ok((await page.locator('.copyable code').allInnerTexts()).includes(`docker pull ${new URL(registry.url).host}/odd/manifests/v1:latest`));

    // the breadcrumb goes back to the repository, not to the manifest odd:v1
    await page.locator('nav.crumbs').getByRole('link', { name: 'odd/manifests/v1' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/odd/manifests%2Fv1`);
    await page.getByRole('heading', { name: 'odd/manifests/v1' }).waitFor();
    assert.deepEqual(problems, []);
  });

  it('reads /ui/repositories/odd/manifests/v1 as the manifest v1 of odd, and /manifests/tags as the tag "tags"', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/manifests/v1`);
    await page.getByRole('heading', { name: 'odd:v1' }).waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(plain.digest));
    await page.goto(`${registry.url}/ui/repositories/odd/manifests/tags`);
    await page.getByRole('heading', { name: 'odd:tags' }).waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(plain.digest));
    // the repository odd/manifests, whose tag is named "tags"
    await page.goto(`${registry.url}/ui/repositories/odd/manifests/manifests/tags`);
    await page.getByRole('heading', { name: 'odd/manifests:tags' }).waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(nightly.digest));
    assert.deepEqual(problems, []);
  });

  it('a manifest path that names no manifest offers the repository of that name', async () => {
    const { page } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/manifests/nightly`);
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /manifest unknown/i);
    await page.getByRole('link', { name: 'odd/manifests/nightly' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/odd/manifests%2Fnightly`);
    await page.locator('table.list tbody tr').first().waitFor();
    assert.deepEqual(await page.locator('table.list tbody tr td:first-child').allInnerTexts(), ['latest']);
  });

  it('the helpers tell a tag list from a manifest by the suffix: <name>/tags/list, <name>/manifests/<reference>', async () => {
    const json = async (path: string) => {
      const res = await fetch(`${registry.url}${path}`);
      assert.equal(res.status, 200, path);
      return (await res.json()) as { name: string; digest?: string; tags?: { tag: string }[] };
    };
    const manifest = await json('/ui/api/repositories/odd/manifests/tags');
    assert.deepEqual([manifest.name, manifest.digest], ['odd', plain.digest]);
    const list = await json('/ui/api/repositories/odd/manifests/tags/list');
    assert.deepEqual([list.name, list.tags?.map((t) => t.tag)], ['odd/manifests', ['tags']]);
    const nestedList = await json('/ui/api/repositories/odd/manifests/v1/tags/list');
    assert.deepEqual([nestedList.name, nestedList.tags?.map((t) => t.tag)], ['odd/manifests/v1', ['latest']]);
    const nestedManifest = await json('/ui/api/repositories/odd/manifests/v1/manifests/latest');
    assert.deepEqual([nestedManifest.name, nestedManifest.digest], ['odd/manifests/v1', nested.digest]);
  });
});
