/**
 * The web interface in a real browser (chromium, playwright-core): the repository list with many
 * repositories, search and pages; a multi-arch index with its platforms; an image with its layers,
 * config and referrers; pull commands; the assets (content hashes, immutable caching, a strict CSP
 * with no inline script); `/` for browsers and for other clients; ui.enabled: false.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

/** a size as the interface writes it */
const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`);
const FLEET = Array.from({ length: 56 }, (_, i) => `fleet/svc-${String(i).padStart(2, '0')}`);
const SIGNATURE = 'application/vnd.dev.cosign.artifact.sig.v1+json';
const SBOM = 'application/vnd.example.sbom.v1+json';

describe('web interface: browsing', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;
  let index: Image;
  let signed: Image;
  let signature: Image;
  let sbom: Image;

  before(async () => {
    browser = await launchBrowser(); // first: it builds the assets the registry loads at start
    registry = await startBerth();
    const small = buildImage('oci-manifest', { layers: 1, layerSize: 256 });
    for (const name of [...FLEET, 'lonely/needle']) await pushImageOK(registry.url, name, small, 'latest');
    index = await pushImageOK(registry.url, 'multi/app', buildImage('oci-index'), '1.0');
    signed = await pushImageOK(registry.url, 'signed/app', buildImage('oci-manifest', { layers: 3 }), 'v1');
    signature = await pushImageOK(registry.url, 'signed/app', buildImage('oci-artifact', { subject: signed, artifactType: SIGNATURE }));
    sbom = await pushImageOK(registry.url, 'signed/app', buildImage('oci-artifact', { subject: signed, artifactType: SBOM }));
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('lists the repositories 50 at a time with their tag counts and last push, searches them, and the URL survives a reload', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/`);
    const rows = page.locator('table.list tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 50);
    const [name, count, pushed] = await rows.nth(0).locator('td').allInnerTexts();
    assert.deepEqual([name, count], ['fleet/svc-00', '1']);
    assert.match(pushed, /^\d{4}-\d\d-\d\d \d\d:\d\d$/);

    await page.getByRole('link', { name: 'Next page' }).click();
    await page.waitForURL(/last=fleet%2Fsvc-49/);
    await page.getByRole('link', { name: 'lonely/needle' }).waitFor();
    const rest = await page.locator('table.list tbody tr td:first-child').allInnerTexts();
    assert.deepEqual(rest, [...FLEET.slice(50), 'lonely/needle', 'multi/app', 'signed/app']);
    assert.equal(await page.getByRole('link', { name: 'Next page' }).count(), 0);

    await page.getByRole('link', { name: 'First page' }).click();
    await page.getByLabel('Search repositories').fill('svc-1');
    await page.waitForURL(/\?q=svc-1$/);
    // the search's own answer, not the page still showing
    await page.waitForFunction(() => document.querySelectorAll('table.list tbody tr').length === 10);
    assert.deepEqual(await page.locator('table.list tbody tr td:first-child').allInnerTexts(), FLEET.slice(10, 20));

    await page.reload();
    await page.getByRole('link', { name: 'fleet/svc-10' }).waitFor();
    assert.equal(await page.getByLabel('Search repositories').inputValue(), 'svc-1');
    assert.equal(await page.locator('table.list tbody tr').count(), 10);

    await page.getByLabel('Search repositories').fill('nothing-like-this');
    await page.getByText('No repository you may pull has “nothing-like-this” in its name.').waitFor();
    assert.deepEqual(problems, []);
  });

  it('shows a multi-arch index with its platforms, and each child with its layers and config', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/multi/app`);
    const row = page.locator('table.list tbody tr', { hasText: '1.0' });
    await row.waitFor();
    const cells = await row.locator('td').allInnerTexts();
    assert.equal(cells[0], '1.0');
    assert.equal(cells[1], index.digest.slice(0, 19));
    assert.equal(cells[2], 'index');
    const total = index.children.flatMap((c) => c.blobs).reduce((sum, b) => sum + b.size, 0);
    assert.equal(cells[3], `${(total / 1024).toFixed(1)} KiB`);
    assert.equal(cells[4], 'linux/amd64, linux/arm64/v8');
    // created: the newest child's image config `created`, to the minute
    const created = index.children.map((c) => (JSON.parse(c.blobs[0].data.toString()) as { created: string }).created).sort().pop()!;
    assert.equal(cells[5], created.slice(0, 16).replace('T', ' '));

    await row.getByRole('link', { name: '1.0' }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/multi/app/manifests/1.0`);
    const platforms = page.locator('section[aria-labelledby="platforms"] tbody tr');
    await platforms.first().waitFor();
    assert.deepEqual(await platforms.locator('td:first-child').allInnerTexts(), ['linux/amd64', 'linux/arm64/v8']);
    assert.match(await page.locator('dl.facts').first().innerText(), new RegExp(index.digest));

    const arm = index.children[1];
    await platforms.nth(1).getByRole('link').click();
    await page.waitForURL(`${registry.url}/ui/repositories/multi/app/manifests/${arm.digest}`);
    const layers = page.locator('section[aria-labelledby="layers"] tbody tr');
    await layers.first().waitFor();
    // the config row, then one row per layer, with its digest and size
    assert.equal(await layers.count(), arm.blobs.length);
    for (const [i, blob] of arm.blobs.entries()) {
      assert.equal(await layers.nth(i).locator('code').getAttribute('title'), blob.digest);
      assert.equal(await layers.nth(i).locator('td').nth(2).innerText(), blob.mediaType);
      assert.equal(await layers.nth(i).locator('td').nth(3).innerText(), size(blob.size));
    }
    const config = page.locator('section[aria-labelledby="config"]');
    assert.match(await config.innerText(), /Cmd\s+\/bin\/sh/);
    assert.match(await config.innerText(), /Working directory\s+\//);
    assert.match(await config.innerText(), /Environment\s+PATH=\/usr\/local\/sbin:/);
    assert.match(await config.innerText(), /Labels[\s\S]*org\.opencontainers\.image\.title\s+berth test image/);
    assert.match(await config.innerText(), /org\.opencontainers\.image\.version\s+arm64/);
    await config.getByText(`History (${arm.blobs.length - 1} steps)`).click();
    assert.match(await config.locator('ol.history').innerText(), /\/bin\/sh -c #\(nop\) ADD file:0 in \//);
    assert.deepEqual(problems, []);
  });

  it('shows an image with its referrers by artifact type, links both ways, and pull commands by tag and digest', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/signed/app/manifests/v1`);
    const referrers = page.locator('section[aria-labelledby="referrers"] tbody tr');
    await referrers.first().waitFor();
    assert.deepEqual(await referrers.locator('td:first-child').allInnerTexts(), [SIGNATURE, SBOM]);
    assert.equal(await referrers.nth(0).locator('code').getAttribute('title'), signature.digest);
    assert.equal(await referrers.nth(1).locator('code').getAttribute('title'), sbom.digest);

    const host = new URL(registry.url).host;
    const commands = await page.locator('.copyable code').allInnerTexts();
    assert.ok(commands.includes(`docker pull ${host}/signed/app:v1`), commands.join('\n'));
    // plain HTTP: each client's switch for it (test/ui/commands.test.ts)
    assert.ok(commands.includes(`podman pull --tls-verify=false ${host}/signed/app@${signed.digest}`), commands.join('\n'));
    assert.ok(commands.includes(`skopeo copy --src-tls-verify=false docker://${host}/signed/app:v1 oci:app`), commands.join('\n'));
    assert.ok(commands.includes(`crane pull --insecure ${host}/signed/app@${signed.digest} app.tar`), commands.join('\n'));

    await referrers.nth(0).getByRole('link').click();
    await page.waitForURL(`${registry.url}/ui/repositories/signed/app/manifests/${signature.digest}`);
    const subject = page.locator('dt:text-is("Refers to") + dd');
    await subject.waitFor();
    assert.match(await page.locator('dl.facts').first().innerText(), /Kind\s+artifact/);
    await subject.getByRole('link').click();
    await page.waitForURL(`${registry.url}/ui/repositories/signed/app/manifests/${signed.digest}`);
    assert.deepEqual(problems, []);
  });

  it('serves assets by content hash with immutable caching, the page under a strict CSP with no inline script', async () => {
    const res = await fetch(`${registry.url}/ui/repositories/multi/app`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html; charset=utf-8');
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
    const html = await res.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    for (const [, attributes, body] of scripts) {
      // only external scripts run; the settings are a JSON data block the CSP does not execute
      assert.ok(/src=/.test(attributes) ? body === '' : /type="application\/json"/.test(attributes), attributes);
    }
    const assets = [...html.matchAll(/(?:src|href)="(\/ui\/assets\/[^"]+)"/g)].map((m) => m[1]);
    assert.equal(assets.length, 2);
    for (const path of assets) {
      assert.match(path, /-[A-Z0-9]{8}\.(js|css)$/);
      const asset = await fetch(`${registry.url}${path}`);
      assert.equal(asset.status, 200);
      assert.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.match(asset.headers.get('content-type') ?? '', path.endsWith('.js') ? /javascript/ : /text\/css/);
      const plain = Buffer.from(await asset.arrayBuffer()); // fetch asks for gzip and inflates
      assert.equal(asset.headers.get('content-encoding'), 'gzip');
      assert.ok(plain.length > 0);
      const raw = await fetch(`${registry.url}${path}`, { headers: { 'accept-encoding': 'identity' } });
      assert.equal(raw.headers.get('content-encoding'), null);
      assert.deepEqual(Buffer.from(await raw.arrayBuffer()), plain);
    }
    const missing = await fetch(`${registry.url}/ui/assets/main-OLDHASH1.js`);
    assert.equal(missing.status, 404);
    assert.match(((await missing.json()) as { errors: { message: string }[] }).errors[0].message, /reload/);
    // nothing the page loads breaks the policy: the browser reports no refusal
    const { page, problems } = await openPage(browser);
    const refused: string[] = [];
    page.on('requestfailed', (req) => refused.push(req.url()));
    await page.goto(`${registry.url}/ui/repositories/signed/app/manifests/v1`);
    await page.locator('section[aria-labelledby="referrers"] tbody tr').first().waitFor();
    assert.deepEqual([...problems, ...refused], []);
  });

  it('redirects a browser asking for / to /ui/; other clients get Distribution\'s empty 200; writes to /ui/ are refused', async () => {
    const browserLike = await fetch(`${registry.url}/`, { headers: { accept: 'text/html,application/xhtml+xml' }, redirect: 'manual' });
    assert.equal(browserLike.status, 302);
    assert.equal(browserLike.headers.get('location'), '/ui/');
    const probe = await fetch(`${registry.url}/`);
    assert.equal(probe.status, 200);
    assert.equal(await probe.text(), '');
    const bare = await fetch(`${registry.url}/ui`, { redirect: 'manual' });
    assert.equal(bare.status, 302);
    assert.equal(bare.headers.get('location'), '/ui/');
    const post = await fetch(`${registry.url}/ui/api/repositories`, { method: 'POST' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    const { page } = await openPage(browser);
    await page.goto(`${registry.url}/`);
    await page.waitForURL(`${registry.url}/ui/`);
    await page.getByRole('heading', { name: 'Repositories' }).waitFor();
  });
});

describe('web interface: ui.enabled false', () => {
  it('answers /ui/ as an unknown route and / as Distribution does, for browsers too', async () => {
    const registry = await startBerth({ ui: { enabled: false } });
    try {
      const ui = await fetch(`${registry.url}/ui/`);
      assert.equal(ui.status, 404);
      assert.equal(((await ui.json()) as { errors: { code: string }[] }).errors[0].code, 'NOT_FOUND');
      const root = await fetch(`${registry.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(root.status, 200);
      assert.equal(await root.text(), '');
    } finally {
      await registry.stop();
    }
  });
});
