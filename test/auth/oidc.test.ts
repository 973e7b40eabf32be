/**
 * Single sign-on for the web interface against a real OpenID Provider (oidc-provider, started
 * here) in Debian's chromium: the sign-in, group rules of auth.access deciding what the person
 * sees and may delete, a callback with a wrong state, a replayed code, an expired session and a
 * person removed from a group. The registry runs on a ManualClock: time passes without waiting.
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
import { startProvider, type TestProvider } from '../helpers/oidc-provider.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

const NAMES = ['apps/shop', 'platform/api', 'platform/web', 'secret/keys'];
const ACCESS = {
  '**': { 'group:admins': ['pull', 'push', 'delete'], ops: ['pull'] },
  'platform/*': { 'group:platform': ['pull', 'delete'], 'group:admins': ['pull', 'delete'] },
  'apps/*': { 'group:apps': ['pull'], 'group:admins': ['pull'] },
};
const MINUTE = 60_000;

const listed = async (page: Page) => {
  await page.locator('table.list tbody tr').first().waitFor();
  return page.locator('table.list tbody tr td:first-child').allInnerTexts();
};

describe('single sign-on (OpenID Connect)', needBrowser(), () => {
  let dir: string;
  let root: string;
  let browser: Browser;
  let provider: TestProvider;
  let registry: TestRegistry;
  /** the same provider and rules, registry clients on the built-in token issuer */
  let tokenRegistry: TestRegistry;
  const clock = new ManualClock(Date.now());

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-oidc-'));
    ({ root } = await seededRoot(NAMES));
    await writeHtpasswd(join(dir, 'htpasswd'), { ops: 'ops-secret-pw' });
    browser = await launchBrowser();
    provider = await startProvider();
    registry = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'berth-oidc', path: join(dir, 'htpasswd') },
          oidc: {
            issuer: provider.issuer,
            clientid: provider.clientId,
            clientsecret: provider.clientSecret,
            scopes: ['openid', 'profile', 'groups'],
            sessionlifetime: '1h',
            groupsrefresh: '5m',
          },
          access: ACCESS,
        },
      },
      { root, clock },
    );
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(dir, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    tokenRegistry = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'berth-oidc', path: join(dir, 'htpasswd') },
          token: { autoredirect: true, service: 'berth-oidc-test', issuer: { name: 'berth-oidc-test', enabled: true, signingkey: join(dir, 'issuer.key') } },
          oidc: { issuer: provider.issuer, clientid: provider.clientId, clientsecret: provider.clientSecret, scopes: ['openid', 'profile', 'groups'] },
          access: ACCESS,
        },
      },
      { root },
    );
    provider.configure(`${registry.url}/ui/callback`, `${tokenRegistry.url}/ui/callback`);
  });
  after(async () => {
    await tokenRegistry?.stop();
    await registry?.stop();
    await provider?.stop();
    await browser?.close();
    await rm(dir, { recursive: true, force: true });
    if (root) await rm(root, { recursive: true, force: true });
  });

  /** a fresh browser that signs in as `user` at the provider's own pages, from the header's "Sign in" */
  const signIn = async (user: string, base = registry.url) => {
    const { page, problems } = await openPage(browser);
    // the provider's development pages import a web font: nothing leaves this machine
    await page.context().route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    await page.goto(`${base}/ui/`);
    await page.locator('header').getByRole('link', { name: 'Sign in' }).click();
    await page.locator('input[name=login]').fill(user);
    await page.locator('input[name=password]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${base}/ui/`);
    await page.locator('#signed-in').waitFor();
    return { page, problems };
  };
  const sessionCookie = async (page: Page) => {
    const cookie = (await page.context().cookies(registry.url)).find((c) => c.name === 'berth_session');
    assert.ok(cookie, 'the session cookie is set');
    return cookie;
  };

  it('signs in through the provider; group rules decide what the person sees and may delete', async () => {
    provider.groups.set('alice', ['platform']);
    provider.groups.set('bob', ['apps']);
    const anonymous = await fetch(`${registry.url}/ui/api/repositories`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), null, 'no Basic challenge: the page offers its own "Sign in"');

    const { page, problems } = await signIn('alice');
    assert.equal(await page.locator('#signed-in').innerText(), 'Signed in as alice');
    assert.deepEqual(await listed(page), ['platform/api', 'platform/web']);
    const cookie = await sessionCookie(page);
    assert.equal(cookie.httpOnly, true);
    assert.equal(cookie.sameSite, 'Lax');
    assert.ok(cookie.expires > Date.now() / 1000 + 50 * 60, 'the cookie lasts the session (1h)');

    await page.goto(`${registry.url}/ui/repositories/platform/api/manifests/latest`);
    await page.getByRole('button', { name: 'Delete this manifest…' }).waitFor();
    await page.goto(`${registry.url}/ui/repositories/apps/shop`);
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /user "alice" may not repository:apps\/shop:pull/);

    // the V2 calls of the page go with the cookie too: alice may delete in platform/*, not elsewhere
    const headers = { cookie: `berth_session=${cookie.value}` };
    const manifest = await fetch(`${registry.url}/v2/platform/web/manifests/latest`, { method: 'HEAD', headers: { ...headers, accept: 'application/vnd.oci.image.manifest.v1+json' } });
    assert.equal(manifest.status, 200);
    const digest = manifest.headers.get('docker-content-digest')!;
    const refused = await fetch(`${registry.url}/v2/secret/keys/manifests/${digest}`, { method: 'DELETE', headers });
    assert.equal(refused.status, 403);
    const deleted = await fetch(`${registry.url}/v2/platform/web/manifests/${digest}`, { method: 'DELETE', headers });
    assert.equal(deleted.status, 202);
    // a forged or foreign cookie is nobody's
    const forged = await fetch(`${registry.url}/ui/api/repositories`, { headers: { cookie: `berth_session=${cookie.value.slice(0, -4)}AAAA` } });
    assert.equal(forged.status, 401);
    // and the page's own delete, in the browser: its DELETE carries the session cookie
    await page.goto(`${registry.url}/ui/repositories/platform/api/manifests/latest`);
    await page.getByRole('button', { name: 'Delete this manifest…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete', exact: true }).click();
    await page.waitForURL(`${registry.url}/ui/repositories/platform/api`);
    const gone = await fetch(`${registry.url}/v2/platform/api/manifests/latest`, { method: 'HEAD', headers });
    assert.equal(gone.status, 404);

    // bob sees apps/*, may not delete there: no delete offered
    const other = await signIn('bob');
    assert.deepEqual(await listed(other.page), ['apps/shop']);
    await other.page.goto(`${registry.url}/ui/repositories/apps/shop/manifests/latest`);
    await other.page.locator('#layers').waitFor();
    assert.equal(await other.page.locator('#delete').count(), 0);

    // htpasswd users keep working beside it (no groups: their own entries only)
    const ops = await fetch(`${registry.url}/ui/api/repositories`, { headers: { authorization: basic('ops', 'ops-secret-pw') } });
    assert.equal(ops.status, 200);

    // sign out: the cookie is gone and the header offers "Sign in" again
    await other.page.locator('header').getByRole('button', { name: 'Sign out' }).click();
    await other.page.locator('header').getByRole('link', { name: 'Sign in' }).waitFor();
    assert.equal((await other.page.context().cookies(registry.url)).find((c) => c.name === 'berth_session'), undefined);
    // (the refusals above, and the provider's web font this test does not let out)
    assert.deepEqual(problems.filter((p) => !/401|403|ERR_FAILED/.test(p)), []);
  });

  it('refuses a callback with a wrong state, and a code sent a second time', async () => {
    provider.groups.set('carol', ['platform']);
    const { page } = await openPage(browser);
    await page.context().route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
    let callback: string | undefined;
    page.on('request', (request) => {
      if (request.url().startsWith(`${registry.url}/ui/callback?`)) callback = request.url();
    });
    await page.goto(`${registry.url}/ui/signin?return=/ui/`);
    // what an eavesdropper would need besides the callback URL: the sign-in's own cookie
    const flow = (await page.context().cookies(`${registry.url}/ui/callback`)).find((c) => c.name === 'berth_signin');
    assert.ok(flow, 'the sign-in in progress is remembered in its own cookie');
    assert.equal(flow.httpOnly, true);
    await page.locator('input[name=login]').fill('carol');
    await page.locator('input[name=password]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('#signed-in').waitFor();
    assert.ok(callback);
    const used = provider.codeRequests;
    const headers = { cookie: `berth_signin=${flow.value}` };

    const wrong = new URL(callback);
    wrong.searchParams.set('state', 'not-the-state-berth-sent');
    const refused = await fetch(wrong, { headers, redirect: 'manual' });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /Sign-in failed: .*state/);
    assert.equal(sessionSet(refused), false);
    assert.equal(provider.codeRequests, used, 'a wrong state is refused before the code goes anywhere');
    const noFlow = await fetch(callback, { redirect: 'manual' });
    assert.equal(noFlow.status, 400);
    assert.match(await noFlow.text(), /no sign-in is in progress in this browser/);

    // the code the browser used, sent again with the flow's cookie kept: the provider refuses it
    const replayed = await fetch(callback, { headers, redirect: 'manual' });
    assert.equal(replayed.status, 400);
    assert.match(await replayed.text(), /invalid_grant/);
    assert.equal(sessionSet(replayed), false);
    assert.equal(provider.codeRequests, used + 1, 'the replay reached the provider, which refused it');
  });

  it('refuses an expired session', async () => {
    provider.groups.set('dave', ['platform']);
    const { page } = await signIn('dave');
    const cookie = await sessionCookie(page);
    const headers = { cookie: `berth_session=${cookie.value}` };
    await clock.advance(59 * MINUTE);
    // (past groupsrefresh: the groups were read again; the session still ends an hour after sign-in)
    const late = await fetch(`${registry.url}/ui/api/session`, { headers });
    assert.deepEqual(await late.json(), { user: 'dave' });
    await clock.advance(2 * MINUTE);
    const expired = await fetch(`${registry.url}/ui/api/session`, { headers });
    assert.deepEqual(await expired.json(), {});
    const list = await fetch(`${registry.url}/ui/api/repositories`, { headers });
    assert.equal(list.status, 401);
    await page.reload();
    await page.locator('header').getByRole('link', { name: 'Sign in' }).waitFor();
  });

  it('takes away a group\'s rights once the groups are read again (auth.oidc.groupsrefresh)', async () => {
    provider.groups.set('erin', ['platform', 'apps']);
    const { page } = await signIn('erin');
    assert.deepEqual(await listed(page), ['apps/shop', 'platform/api', 'platform/web']);
    provider.groups.set('erin', ['platform']);
    await clock.advance(4 * MINUTE);
    await page.reload();
    assert.deepEqual(await listed(page), ['apps/shop', 'platform/api', 'platform/web'], 'within the refresh interval the session\'s groups stand');
    await clock.advance(2 * MINUTE);
    const old = await sessionCookie(page);
    const refused = await fetch(`${registry.url}/v2/apps/shop/tags/list`, { headers: { cookie: `berth_session=${old.value}` } });
    assert.equal(refused.status, 403);
    assert.equal(sessionSet(refused), true, 'a refusal carries the renewed session too');
    await page.reload();
    await page.getByRole('cell', { name: 'platform/api' }).waitFor();
    assert.deepEqual(await listed(page), ['platform/api', 'platform/web']);
    const cookie = await sessionCookie(page);
    const shop = await fetch(`${registry.url}/v2/apps/shop/tags/list`, { headers: { cookie: `berth_session=${cookie.value}` } });
    assert.equal(shop.status, 403, 'the renewed cookie carries the groups read again');
  });

  it('with token auth too: the page sends the session cookie, the built-in issuer\'s sign-in form steps aside', async () => {
    provider.groups.set('frank', ['apps']);
    const anonymous = await openPage(browser);
    await anonymous.page.goto(`${tokenRegistry.url}/ui/`);
    await anonymous.page.locator('header').getByRole('link', { name: 'Sign in' }).waitFor();
    assert.equal(await anonymous.page.locator('header').getByRole('link', { name: 'Sign in' }).getAttribute('href'), '/ui/signin?return=%2Fui%2F');
    const { page } = await signIn('frank', tokenRegistry.url);
    assert.deepEqual(await listed(page), ['apps/shop']);
    const cookie = (await page.context().cookies(tokenRegistry.url)).find((c) => c.name === 'berth_session')!;
    const denied = await fetch(`${tokenRegistry.url}/v2/platform/web/tags/list`, { headers: { cookie: `berth_session=${cookie.value}` } });
    assert.equal(denied.status, 403);
    // a Bearer token (docker, podman) is decided by itself, whatever the cookie
    const bearer = await fetch(`${tokenRegistry.url}/v2/apps/shop/tags/list`, { headers: { cookie: `berth_session=${cookie.value}`, authorization: 'Bearer not-a-token' } });
    assert.equal(bearer.status, 401);
  });
});

function sessionSet(res: Response): boolean {
  return res.headers.getSetCookie().some((c) => c.startsWith('berth_session=') && !c.startsWith('berth_session=;'));
}
