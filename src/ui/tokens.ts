/**
 * The web interface's tokens helpers: the signed-in person's own API tokens (auth/api-tokens.ts).
 *
 * - `GET /ui/api/tokens`: their tokens (never a secret).
 * - `POST /ui/api/tokens` (JSON `{name, repositories, actions, expires?}`, expires in days): a new
 *   token owned by them; the answer holds its secret, shown once.
 * - `DELETE /ui/api/tokens/NAME`: revokes one of theirs.
 *
 * Within their rights: a token is created only for actions the registry's own authorization gives
 * the caller on each glob (asked for a name the glob matches: `team/*` as `team/x`), and at use it
 * is always cut to what its owner may do then, so a glob broader than the sample grants nothing
 * more. An API token cannot manage tokens. A POST must be JSON (a form cannot send it), and the
 * edge refuses a POST or DELETE from a page of another origin (http/origin.ts): a page elsewhere
 * cannot make a token with the browser's login.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiTokenProblem, tokenProblem, type ApiTokens } from '../auth/api-tokens.js';
import type { AccessRequest } from '../auth/access.js';
import type { CallerGrant } from '../auth/index.js';
import { contentTypeOf, readSmallBody } from '../http/body.js';
import type { Services } from '../http/context.js';
import { authorizeRequest } from '../http/authorize.js';
import { DuplicateTokenName } from '../metadata/api-tokens.js';
import { RegistryError } from '../registry/errors.js';
import type { CreatedToken, TokenList } from './tokens-wire.js';

export const TOKENS_PATH = '/ui/api/tokens';
const BODY_LIMIT = 16 * 1024;
const DAY_MS = 86_400_000;

/** is `path` one of these helpers? (they take POST and DELETE, unlike the rest of the interface) */
export function isTokensPath(path: string): boolean {
  return path === TOKENS_PATH || path.startsWith(`${TOKENS_PATH}/`);
}

export async function serveTokens(req: FastifyRequest, reply: FastifyReply, path: string, services: Services): Promise<unknown> {
  const tokens = services.auth.tokens;
  if (!tokens) throw new RegistryError('UNSUPPORTED', 'API tokens need the metadata database (a metadata block) and htpasswd or the built-in token issuer', { status: 404 });
  const name = path === TOKENS_PATH ? undefined : decodeURIComponent(path.slice(TOKENS_PATH.length + 1));
  let body: unknown;
  if (name === undefined && (req.method === 'GET' || req.method === 'HEAD')) body = await list(req, services, tokens);
  else if (name === undefined && req.method === 'POST') body = await create(req, services, tokens);
  else if (name !== undefined && req.method === 'DELETE') body = await revoke(req, services, tokens, name);
  else {
    reply.header('allow', name === undefined ? 'GET, HEAD, POST' : 'DELETE');
    throw new RegistryError('UNSUPPORTED', `${req.method} ${path} is not supported`, { status: 405 });
  }
  return reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(body));
}

async function list(req: FastifyRequest, services: Services, tokens: ApiTokens): Promise<TokenList> {
  const person = await signedIn(req, services, []);
  return { user: person.user!, tokens: await tokens.list(person.user) };
}

async function create(req: FastifyRequest, services: Services, tokens: ApiTokens): Promise<CreatedToken> {
  if (!/^application\/json\b/i.test(contentTypeOf(req) ?? '')) throw badRequest('send the new token as JSON (Content-Type: application/json)');
  const raw = await readSmallBody(req, BODY_LIMIT, () => badRequest(`the request is larger than ${BODY_LIMIT} bytes`));
  let input: { name?: unknown; repositories?: unknown; actions?: unknown; expires?: unknown };
  try {
    input = JSON.parse(raw.toString('utf8')) as typeof input;
  } catch {
    throw badRequest('the body is not JSON');
  }
  const strings = (value: unknown) => (Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined);
  const repositories = strings(input?.repositories);
  const actions = strings(input?.actions);
  if (typeof input?.name !== 'string' || !repositories || !actions) throw badRequest('expected {"name": string, "repositories": [glob, ...], "actions": ["pull", ...], "expires": days}');
  if (input.expires !== undefined && input.expires !== null && !(typeof input.expires === 'number' && Number.isInteger(input.expires) && input.expires > 0)) {
    throw badRequest('expires: a whole number of days, or nothing for a token that never expires');
  }
  const problem = tokenProblem({ name: input.name, repositories, actions });
  if (problem) throw badRequest(problem);
  // the caller must have each action on (a name of) each glob: the registry's own authorization says
  const needed: AccessRequest[] = repositories.flatMap((glob) => actions.map((action) => ({ type: 'repository' as const, name: sampleName(glob), action })));
  const person = await signedIn(req, services, needed).catch((err: unknown) => {
    if (!(err instanceof RegistryError && err.code === 'DENIED' && Array.isArray(err.detail))) throw err;
    const lacking = (err.detail as { Name: string; Action: string }[]).map(({ Name, Action }) => `${Action} on ${JSON.stringify(repositories.find((g) => sampleName(g) === Name) ?? Name)}`);
    throw new RegistryError('DENIED', `you may not ${lacking.join(', ')}, so a token of yours may not either`, { detail: err.detail });
  });
  try {
    const { token, secret } = await tokens.create({
      name: input.name,
      repositories,
      actions,
      ...(typeof input.expires === 'number' ? { expiresInMs: input.expires * DAY_MS } : {}),
      owner: person.user!,
      ...(person.groups !== undefined ? { ownerGroups: person.groups } : {}),
    });
    return { token, secret };
  } catch (err) {
    if (err instanceof ApiTokenProblem) throw badRequest(err.message);
    if (err instanceof DuplicateTokenName) throw new RegistryError('DENIED', err.message, { status: 409 });
    throw err;
  }
}

async function revoke(req: FastifyRequest, services: Services, tokens: ApiTokens, name: string): Promise<{ revoked: string }> {
  const person = await signedIn(req, services, []);
  if (!(await tokens.revoke(name, { owner: person.user }))) {
    throw new RegistryError('NOT_FOUND', `you have no active API token named ${JSON.stringify(name)}`, { status: 404 });
  }
  return { revoked: name };
}

/** the caller, who must be a person (signed in, not an API token) with `needed` */
async function signedIn(req: FastifyRequest, services: Services, needed: AccessRequest[]): Promise<CallerGrant> {
  const grant = await authorizeRequest(req, services.auth, needed);
  if (grant.user === undefined) throw new RegistryError('UNAUTHORIZED', 'sign in to manage your API tokens');
  if (grant.apiToken) throw new RegistryError('DENIED', 'an API token cannot manage API tokens: sign in as yourself');
  return grant;
}

/** a repository name the glob matches (`**` -> `x`, `team/*` -> `team/x`, `a/**` -> `a/x`) */
function sampleName(glob: string): string {
  return glob.split('/').map((part) => (part === '**' ? 'x' : part.replace(/\*/g, 'x'))).join('/');
}

function badRequest(message: string): RegistryError {
  return new RegistryError('UNSUPPORTED', message, { status: 400 });
}
