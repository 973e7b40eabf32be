/**
 * The tokens page in chromium (htpasswd, the browser's own Basic login): the signed-in person
 * creates a token (its secret shown once, and it pushes), is refused a glob and action they do not
 * have with the reason, sees their tokens, and revokes one. With the built-in issuer (the
 * interface's sign-in form), the page gets the Bearer token a new token's rights need.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: API tokens page', needBrowser(), () => {
  let browser: Browser;
  let registry: TestRegistry;
  let work: string;

  before(async () => {
    browser = await launchBrowser();
    work = await mkdtemp(join(tmpdir(), 'berth-ui-tokens-'));
    await writeHtpasswd(join(work, 'htpasswd'), { alice: 'alice-pw' });
    registry = await startBerth({
      metadata: { enabled: true },
      auth: { htpasswd: { realm: 'berth', path: join(work, 'htpasswd') }, access: { 'team/*': { alice: ['pull', 'push'] }, '**': { '*': ['pull'] } } },
    });
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('creates a token (secret once), refuses one beyond the person`s rights, lists and revokes', async () => {
    const { page, problems } = await openPage(browser, { httpCredentials: { username: 'alice', password: 'alice-pw' } });
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${registry.url}/ui/tokens`);
    await page.getByText('You have no API tokens.').waitFor();

    await page.fill('#token-name', 'ci-web');
    await page.fill('#token-repositories', 'team/*');
    await page.check('input[name=push]');
    await page.click('#new-token button[type=submit]');
    await page.locator('#created-token').waitFor();
    const secret = await page.locator('#copy-secret').innerText();
    assert.match(secret, /^berth_[A-Za-z0-9_-]{43}$/);
    assert.match(await page.locator('#copy-login-command').innerText(), /^docker login -u ci-web --password-stdin 127\.0\.0\.1:\d+$/);
    await page.locator('tr[data-token="ci-web"]').waitFor();
    assert.match(await page.locator('tr[data-token="ci-web"]').innerText(), /ci-web\s+team\/\*\s+pull, push\s+active/);

    // the token pushes
    const image = buildImage('oci-manifest', { layers: 1 });
    for (const blob of image.blobs) {
      const res = await fetch(`${registry.url}/v2/team/app/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { authorization: basic('ci-web', secret) } });
      assert.equal(res.status, 201);
    }
    const put = await fetch(`${registry.url}/v2/team/app/manifests/v1`, { method: 'PUT', body: image.body, headers: { authorization: basic('ci-web', secret), 'content-type': image.mediaType } });
    assert.equal(put.status, 201);

    // beyond alice's rights: push everywhere
    await page.fill('#token-name', 'too-much');
    await page.fill('#token-repositories', '**');
    await page.check('input[name=push]');
    await page.click('#new-token button[type=submit]');
    await page.locator('p.problem[role=alert]').waitFor();
    assert.match(await page.locator('p.problem[role=alert]').innerText(), /you may not push on "\*\*", so a token of yours may not either/);

    await page.click('tr[data-token="ci-web"] button');
    await page.locator('tr[data-token="ci-web"]', { hasText: 'revoked' }).waitFor();
    assert.equal(await page.locator('tr[data-token="ci-web"] button').count(), 0);
    // the refused create is the one failed request
    assert.deepEqual(problems.filter((p) => !/403/.test(p)), []);
  });

  it('with the built-in issuer: signs in through the form and creates a token', async () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    const issuing = await startBerth({
      metadata: { enabled: true },
      auth: {
        htpasswd: { realm: 'berth', path: join(work, 'htpasswd') },
        token: { autoredirect: true, service: 'berth-ui-tokens', issuer: { name: 'berth-ui-tokens', enabled: true, signingkey: join(work, 'issuer.key') } },
        access: { 'team/*': { alice: ['pull', 'push'] }, '**': { '*': ['pull'] } },
      },
    });
    try {
      const { page, problems } = await openPage(browser);
      await page.goto(`${issuing.url}/ui/login`);
      await page.getByLabel('Username').fill('alice');
      await page.getByLabel('Password').fill('alice-pw');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('link', { name: 'API tokens' }).click();
      await page.getByText('You have no API tokens.').waitFor();
      await page.fill('#token-name', 'ci-bearer');
      await page.fill('#token-repositories', 'team/*');
      await page.check('input[name=push]');
      await page.click('#new-token button[type=submit]');
      await page.locator('#created-token').waitFor();
      assert.match(await page.locator('#copy-secret').innerText(), /^berth_/);
      await page.locator('tr[data-token="ci-bearer"]').waitFor();
      // the first POST is challenged for the scope the new token needs (then sent again with it)
      assert.deepEqual(problems.filter((p) => !/401/.test(p)), []);
    } finally {
      await issuing.stop();
    }
  });
});
