/**
 * Who sees what in the web interface, in a real browser: htpasswd (the browser's own Basic login,
 * here playwright's httpCredentials) and the built-in token issuer (the interface's login form);
 * a user who may pull only some repositories sees only those, in the list and by URL; the
 * registry page is for those who may read the whole catalog.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { seededRoot } from '../helpers/auth-endpoints.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

const USERS = { admin: 'admin-secret-pw', reader: 'reader-secret-pw' };
const ACCESS = {
  '**': { admin: ['pull', 'push', 'delete'] },
  'team/*': { '*': ['pull'] },
  'public/*': { anonymous: ['pull'], '*': ['pull'] },
};
const NAMES = ['public/docs', 'secret/keys', 'team/api', 'team/web'];

const listed = async (page: Page) => {
  await page.locator('table.list tbody tr').first().waitFor();
  return page.locator('table.list tbody tr td:first-child').allInnerTexts();
};

describe('web interface: access', needBrowser(), () => {
  let dir: string;
  let root: string;
  let browser: Browser;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-ui-access-'));
    ({ root } = await seededRoot(NAMES));
    await writeHtpasswd(join(dir, 'htpasswd'), USERS);
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(dir, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
    if (root) await rm(root, { recursive: true, force: true });
  });

  describe('htpasswd', () => {
    let registry: TestRegistry;
    before(async () => {
      registry = await startBerth({ auth: { htpasswd: { realm: 'berth-ui', path: join(dir, 'htpasswd') }, access: ACCESS } }, { root });
    });
    after(() => registry?.stop());

    it('asks for the browser\'s login (the helpers answer 401 with the Basic challenge); a wrong password is refused', async () => {
      const res = await fetch(`${registry.url}/ui/api/repositories`);
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Basic realm="berth-ui"');
      // (without credentials headless chromium waits on its login dialog for ever: a wrong password ends it)
      const { page } = await openPage(browser, { httpCredentials: { username: 'reader', password: 'wrong' } });
      await page.goto(`${registry.url}/ui/`);
      await page.getByRole('alert').waitFor();
      assert.match(await page.getByRole('alert').innerText(), /invalid username or password/);
    });

    it('a reader logged in sees only the repositories they may pull, and is refused the others by URL', async () => {
      const { page } = await openPage(browser, { httpCredentials: { username: 'reader', password: USERS.reader } });
      await page.goto(`${registry.url}/ui/`);
      assert.deepEqual(await listed(page), ['public/docs', 'team/api', 'team/web']);
      await page.getByLabel('Search repositories').fill('keys');
      await page.getByText('No repository you may pull has “keys” in its name.').waitFor();

      await page.goto(`${registry.url}/ui/repositories/secret/keys`);
      await page.getByRole('alert').waitFor();
      assert.match(await page.getByRole('alert').innerText(), /You may not see this\. user "reader" may not repository:secret\/keys:pull/);
      const direct = await fetch(`${registry.url}/ui/api/repositories/secret/keys/manifests/latest`, { headers: { authorization: basic('reader', USERS.reader) } });
      assert.equal(direct.status, 403);
      const registryPage = await fetch(`${registry.url}/ui/api/registry`, { headers: { authorization: basic('reader', USERS.reader) } });
      assert.equal(registryPage.status, 200, 'under htpasswd every signed-in user may read the catalog (it is filtered), so the registry page too');

      await page.goto(`${registry.url}/ui/repositories/team/api`);
      assert.deepEqual(await listed(page), ['latest']);
      // a reader may not delete: no delete is offered
      await page.goto(`${registry.url}/ui/repositories/team/api/manifests/latest`);
      await page.locator('#layers').waitFor();
      assert.equal(await page.locator('#delete').count(), 0);
    });

    it('the admin sees every repository, and is offered delete where auth.access lets them delete', async () => {
      const { page } = await openPage(browser, { httpCredentials: { username: 'admin', password: USERS.admin } });
      await page.goto(`${registry.url}/ui/`);
      assert.deepEqual(await listed(page), NAMES);
      await page.goto(`${registry.url}/ui/repositories/secret/keys/manifests/latest`);
      await page.getByRole('button', { name: 'Delete this manifest…' }).waitFor();
      // team/* has its own rule (pull for everyone), which decides alone
      await page.goto(`${registry.url}/ui/repositories/team/api/manifests/latest`);
      await page.locator('#layers').waitFor();
      assert.equal(await page.locator('#delete').count(), 0);
    });
  });

  describe('token auth with the built-in issuer', () => {
    let registry: TestRegistry;
    /** the registry's clock: the htpasswd file is checked at most once a second of it */
    const clock = new ManualClock(Date.now());
    before(async () => {
      registry = await startBerth(
        {
          auth: {
            htpasswd: { realm: 'berth-ui', path: join(dir, 'htpasswd') },
            token: { autoredirect: true, service: 'berth-ui-test', issuer: { name: 'berth-ui-test', enabled: true, signingkey: join(dir, 'issuer.key') } },
            access: ACCESS,
          },
        },
        { root, clock },
      );
    });
    after(() => registry?.stop());

    /** the interface's sign-in form, filled in and sent */
    const signIn = async (page: Page, user: keyof typeof USERS) => {
      await page.goto(`${registry.url}/ui/login`);
      await page.getByLabel('Username').fill(user);
      await page.getByLabel('Password').fill(USERS[user]);
      await page.getByRole('button', { name: 'Sign in' }).click();
    };

    it('shows an anonymous visitor what anonymous may pull, and a signed-in reader their repositories, not more', async () => {
      const { page, problems } = await openPage(browser);
      await page.goto(`${registry.url}/ui/`);
      assert.deepEqual(await listed(page), ['public/docs']);

      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.getByLabel('Username').fill('reader');
      await page.getByLabel('Password').fill('not-the-password');
      // the issuer's answer: 400 invalid_grant without a Basic challenge, so no browser login dialog
      const refused = page.waitForResponse((res) => res.url().endsWith('/auth/token') && res.request().method() === 'POST');
      await page.getByRole('button', { name: 'Sign in' }).click();
      assert.equal((await refused).status(), 400);
      assert.equal(await (await refused).headerValue('www-authenticate'), null);
      await page.getByRole('alert').waitFor();
      assert.equal(await page.getByRole('alert').innerText(), 'Wrong user name or password.');
      assert.equal(await page.getByLabel('Username').inputValue(), 'reader');

      await page.getByLabel('Password').fill(USERS.reader);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${registry.url}/ui/`);
      await page.getByRole('button', { name: 'Sign out reader' }).waitFor();
      await page.getByRole('link', { name: 'team/web' }).waitFor();
      assert.deepEqual(await listed(page), ['public/docs', 'team/api', 'team/web']);
      // the tab keeps a refresh token, never the password
      const stored = await page.evaluate(() => JSON.stringify(Object.entries(sessionStorage)));
      assert.ok(!stored.includes(USERS.reader), stored);
      assert.match(stored, /berth\.refresh/);

      await page.goto(`${registry.url}/ui/repositories/team/api/manifests/latest`);
      await page.locator('#layers').waitFor();
      await page.goto(`${registry.url}/ui/repositories/secret/keys`);
      await page.getByRole('alert').waitFor();
      assert.match(await page.getByRole('alert').innerText(), /does not grant repository:secret\/keys:pull/);
      await page.goto(`${registry.url}/ui/registry`);
      await page.getByRole('alert').waitFor();
      assert.match(await page.getByRole('alert').innerText(), /registry:catalog:\*/);

      await page.getByRole('button', { name: 'Sign out reader' }).click();
      assert.deepEqual(await listed(page), ['public/docs']);
      assert.deepEqual(problems.filter((p) => !/status of 40[013]/.test(p)), []);
    });

    it('a refresh token the issuer no longer takes (the password changed) signs the tab out, with no login dialog', async () => {
      const { page } = await openPage(browser);
      await signIn(page, 'reader');
      await page.getByRole('link', { name: 'team/web' }).waitFor();
      try {
        await writeHtpasswd(join(dir, 'htpasswd'), { ...USERS, reader: 'a-new-password' });
        await clock.advance(1000); // the file is checked at most once a second
        const refused = page.waitForResponse((res) => res.url().endsWith('/auth/token') && res.request().method() === 'POST');
        await page.reload();
        assert.equal((await refused).status(), 400);
        assert.equal(await (await refused).headerValue('www-authenticate'), null);
        await page.getByRole('link', { name: 'Sign in' }).waitFor();
        assert.deepEqual(await listed(page), ['public/docs']);
        assert.equal(await page.evaluate(() => sessionStorage.getItem('berth.refresh')), null);
      } finally {
        await writeHtpasswd(join(dir, 'htpasswd'), USERS);
        await clock.advance(1000);
      }
    });

    it('the admin signs in and sees every repository and the registry page', async () => {
      const { page } = await openPage(browser);
      await signIn(page, 'admin');
      await page.getByRole('link', { name: 'secret/keys' }).waitFor();
      assert.deepEqual(await listed(page), NAMES);
      await page.getByRole('link', { name: 'Registry', exact: true }).click();
      await page.locator('#about').waitFor();
      assert.match(await page.locator('#about').innerText(), /Authentication\s+token/);
    });
  });
});
