/**
 * Requests to the registry from the browser. With htpasswd the browser answers the Basic challenge
 * itself (its own login dialog). With token auth, a 401's Bearer challenge names the realm and the
 * scope: a token for it comes from the issuer with the refresh token of the login (kept in
 * sessionStorage, never the password), or anonymously before any login, and the request is sent again.
 * The issuer answers a wrong password or refresh token in a POST with 400 invalid_grant and no
 * Basic challenge, so the browser's own login dialog never opens over the form; token requests
 * omit credentials all the same (no cookie or remembered Basic login goes to the issuer).
 */
import { settings } from './settings';
import type { Session } from '../wire';

const REFRESH = 'berth.refresh';
const USER = 'berth.user';

interface Challenge {
  realm: string;
  service?: string;
  scope?: string;
}

/** the last Bearer challenge seen: where the login form asks for a token */
let lastChallenge: Challenge | undefined;
/** access tokens by the scope they were asked for ('' for none) */
const tokens = new Map<string, string>();

export class APIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** htpasswd: the user of the browser's own Basic login (auth.oidc: of the session cookie), learned from /ui/api/session once a request passed */
let basicUser: string | undefined;
let askingSession = false;

/** the signed-in user: token auth's login of this tab, or htpasswd's Basic login */
export const signedInUser = (): string | undefined => sessionStorage.getItem(USER) ?? basicUser;

/** fired on window when the tab signs in or out (also when the issuer no longer takes its refresh token) */
export const SESSION_EVENT = 'berth-session';

/**
 * `path` below the prefix (`/v2/...`, `/ui/api/...`); `scope` is what the registry will ask for
 * (repository:NAME:pull, ...), so a token held for it is sent at once.
 */
export async function request(path: string, init: RequestInit = {}, scope = ''): Promise<Response> {
  const url = settings.prefix + path;
  const send = (token?: string) =>
    fetch(url, { ...init, credentials: settings.auth === 'token' && !settings.signIn ? 'omit' : 'same-origin', headers: { ...(init.headers as Record<string, string>), ...(token ? { authorization: `Bearer ${token}` } : {}) } });
  let res = await send(tokens.get(scope));
  if (res.status === 401 && settings.auth === 'token') {
    const challenge = parseBearer(res.headers.get('www-authenticate'));
    if (challenge) {
      lastChallenge = challenge;
      const token = await fetchToken(challenge);
      if (token) {
        tokens.set(scope, token);
        res = await send(token);
      }
    }
  }
  if (res.ok && (settings.auth === 'htpasswd' || settings.signIn) && basicUser === undefined && !askingSession) void learnBasicUser();
  return res;
}

/** asks who the browser's Basic login is (the answer never challenges), and tells the frame */
async function learnBasicUser(): Promise<void> {
  askingSession = true;
  try {
    const res = await fetch(`${settings.prefix}/ui/api/session`, { credentials: 'same-origin', headers: { accept: 'application/json' } });
    basicUser = res.ok ? ((await res.json()) as Session).user : undefined;
    if (basicUser !== undefined) dispatchEvent(new Event(SESSION_EVENT));
  } catch {
    // no name to show; the next request asks again
  } finally {
    askingSession = false;
  }
}

/** GET of a JSON document; errors become APIError with the registry's message */
export async function getJSON<T>(path: string, scope = '', signal?: AbortSignal): Promise<T> {
  const res = await request(path, { headers: { accept: 'application/json' }, signal }, scope);
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as T;
}

export async function errorOf(res: Response): Promise<APIError> {
  let message = `${res.status} ${res.statusText}`;
  let code: string | undefined;
  try {
    const body = (await res.json()) as { errors?: { code: string; message: string }[] };
    if (body.errors?.[0]) ({ code, message } = body.errors[0]);
  } catch {
    // not the registry's JSON error body
  }
  return new APIError(res.status, message, code);
}

function parseBearer(header: string | null): Challenge | undefined {
  if (!header || !/^Bearer\s/i.test(header)) return undefined;
  const params = Object.fromEntries([...header.slice(7).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  return params.realm ? { realm: params.realm, service: params.service, scope: params.scope } : undefined;
}

async function fetchToken(challenge: Challenge): Promise<string | undefined> {
  const refresh = sessionStorage.getItem(REFRESH);
  let res: Response | undefined;
  if (refresh) {
    res = await fetch(challenge.realm, { method: 'POST', credentials: 'omit', body: form({ grant_type: 'refresh_token', refresh_token: refresh, service: challenge.service, scope: challenge.scope }) });
    if (await invalidGrant(res)) signOut(); // expired, or its user or password changed: anonymous from now on
  }
  if (!res?.ok) {
    const query = new URLSearchParams();
    if (challenge.service) query.set('service', challenge.service);
    if (challenge.scope) query.set('scope', challenge.scope);
    res = await fetch(`${challenge.realm}?${query}`, { credentials: 'omit' });
  }
  if (!res.ok) return undefined;
  return ((await res.json()) as { token?: string; access_token?: string }).access_token;
}

/** the issuer refused the password or refresh token (OAuth2's 400 invalid_grant) */
async function invalidGrant(res: Response): Promise<boolean> {
  if (res.status !== 400) return false;
  try {
    return ((await res.clone().json()) as { error?: string }).error === 'invalid_grant';
  } catch {
    return false;
  }
}

function form(fields: Record<string, string | undefined>): URLSearchParams {
  const body = new URLSearchParams();
  for (const [key, value] of Object.entries(fields)) if (value !== undefined) body.set(key, value);
  return body;
}

/** token auth: the password grant of the issuer; keeps the refresh token for this tab's session */
export async function signIn(username: string, password: string): Promise<void> {
  if (!lastChallenge) await request('/ui/api/repositories?n=0'); // learns the realm
  if (!lastChallenge) throw new APIError(0, 'the registry did not name a token issuer');
  const res = await fetch(lastChallenge.realm, {
    method: 'POST',
    credentials: 'omit',
    body: form({ grant_type: 'password', username, password, service: lastChallenge.service, access_type: 'offline', client_id: 'berth-ui' }),
  });
  if (await invalidGrant(res)) throw new APIError(res.status, 'Wrong user name or password.');
  if (!res.ok) throw await errorOf(res);
  const body = (await res.json()) as { refresh_token?: string };
  if (!body.refresh_token) throw new APIError(res.status, 'the issuer gave no refresh token');
  tokens.clear();
  sessionStorage.setItem(REFRESH, body.refresh_token);
  sessionStorage.setItem(USER, username);
  dispatchEvent(new Event(SESSION_EVENT));
}

export function signOut(): void {
  tokens.clear();
  sessionStorage.removeItem(REFRESH);
  sessionStorage.removeItem(USER);
  dispatchEvent(new Event(SESSION_EVENT));
}
