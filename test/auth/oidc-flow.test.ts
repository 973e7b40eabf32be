/**
 * OidcSignIn against the real provider without a browser (its login and consent forms sent with
 * fetch): a sign-in is audited with the user, and the session's groups are read again through the
 * refresh token once they are older than groupsrefresh, in a renewed cookie. The chromium tests
 * are test/auth/oidc.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { AuditRecord } from '../../src/audit/record.js';
import { OidcSignIn } from '../../src/auth/oidc/sign-in.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { startProvider, type TestProvider } from '../helpers/oidc-provider.js';

const where = { protocol: 'http', host: 'registry.test', prefix: '', address: '192.0.2.9' };
const MINUTE = 60_000;

describe('OpenID Connect sign-in (no browser)', () => {
  let provider: TestProvider;
  const clock = new ManualClock(Date.now());
  const records: AuditRecord[] = [];
  let signIn: OidcSignIn;

  before(async () => {
    provider = await startProvider();
    provider.configure('http://registry.test/ui/callback');
    signIn = new OidcSignIn(
      { issuer: provider.issuer, clientid: provider.clientId, clientsecret: provider.clientSecret, scopes: ['openid', 'profile', 'groups'], userclaim: 'preferred_username', groupsclaim: 'groups', sessionlifetime: 3_600_000, groupsrefresh: 5 * MINUTE },
      { secret: 'shared-secret', clock, logger: pino({ level: 'silent' }), audit: { record: (r) => records.push(r) } },
    );
  });
  after(() => provider?.stop());

  it('audits the sign-in, and reads the groups again after groupsrefresh into a renewed cookie', async () => {
    provider.groups.set('gina', ['platform', 'apps']);
    const { location, cookie } = await signIn.begin(where, '/ui/repositories/platform/api');
    const query = await atTheProvider(location, 'gina');
    const { back, cookies } = await signIn.finish(where, query, cookieOf(cookie));
    assert.equal(back, '/ui/repositories/platform/api');
    assert.deepEqual(records, [{ actor: 'gina', address: '192.0.2.9', action: 'sign-in', outcome: 'ok', detail: `OpenID Connect (${provider.issuer})` }]);
    const session = cookieOf(cookies.find((c) => c.startsWith('berth_session='))!);
    assert.deepEqual(await signIn.session(session, where), { user: 'gina', groups: ['platform', 'apps'] });

    provider.groups.set('gina', ['platform']);
    await clock.advance(5 * MINUTE);
    const renewed = await signIn.session(session, where);
    assert.equal(renewed?.user, 'gina');
    assert.deepEqual(renewed?.groups, ['platform']);
    assert.match(renewed!.renewed!, /^berth_session=[\w-]+; Path=\/; Max-Age=3300; HttpOnly; SameSite=Lax$/);
    // the renewed cookie holds the groups read now: no refresh for another interval
    assert.deepEqual(await signIn.session(cookieOf(renewed!.renewed!), where), { user: 'gina', groups: ['platform'] });
  });

  it('ends the session when its groups cannot be read again (the provider is gone), and never sends the browser to another site', async () => {
    provider.groups.set('hank', []);
    const { location, cookie } = await signIn.begin(where, 'https://evil.example/ui/');
    const { back, cookies } = await signIn.finish(where, await atTheProvider(location, 'hank'), cookieOf(cookie));
    assert.equal(back, '/ui/');
    const session = cookieOf(cookies.find((c) => c.startsWith('berth_session='))!);
    await provider.stop(); // the provider is gone: the groups cannot be read again
    await clock.advance(5 * MINUTE);
    assert.equal(await signIn.session(session, where), undefined);
  });
});

/** `name=value` of a Set-Cookie */
function cookieOf(setCookie: string): string {
  return setCookie.split(';')[0];
}

/** the provider's login and consent pages, answered with fetch; the query of the redirect back to the registry */
async function atTheProvider(start: string, user: string): Promise<string> {
  const jar = new Map<string, string>();
  let url = start;
  let form: Record<string, string> | undefined;
  for (let hop = 0; hop < 12; hop++) {
    const res = await fetch(url, {
      method: form ? 'POST' : 'GET',
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form && new URLSearchParams(form),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair.indexOf('=');
      jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    form = undefined;
    const next = res.headers.get('location');
    if (next) {
      const target = new URL(next, url);
      if (target.host === 'registry.test') return target.search;
      url = target.href;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    assert.ok(action, `a form at the provider: ${html.slice(0, 300)}`);
    url = new URL(action, url).href;
    form = /name="login"/.test(html) ? { prompt: 'login', login: user, password: 'any' } : { prompt: 'consent' };
  }
  assert.fail('the provider did not send the browser back');
}
