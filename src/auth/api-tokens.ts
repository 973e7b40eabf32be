/**
 * API tokens (robot accounts): a name, a secret, repository globs and actions, kept in the metadata
 * database (src/metadata/api-tokens.ts). The name is the user and the secret the password of Basic
 * credentials (`docker login -u NAME -p SECRET`), with htpasswd and with the built-in issuer.
 *
 * - A secret is `berth_` + 32 random bytes (base64url): recognisable in a leak scan, and the prefix
 *   tells the auth chain to try tokens first. Only its SHA-256 is stored, compared in constant
 *   time (docs/decisions.md, "API tokens": a fast hash is enough for 256 random bits).
 * - A token grants its actions on the repositories its globs match; one created by a person in
 *   the web interface also never more than that person may do now (`OwnerRights`, auth.access).
 * - Wrong secrets draw from the failed-login buckets (login-guard.ts) like wrong passwords.
 * - Records read are kept CACHE_MS, so a push's requests cost no query each and a revocation or
 *   expiry is seen by every instance within CACHE_MS (well under the 5 s the issue asks).
 * - Each use is noted in memory and written in one transaction per flush (`flushUses`, every
 *   LAST_USE_FLUSH_MS from features/metadata.ts): a request never waits for a write.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuditSink } from '../audit/record.js';
import type { ApiTokenRecord, ApiTokenRecords } from '../metadata/api-tokens.js';
import { isRepositoryGlob, repositoryGlob } from '../registry/names.js';
import type { Clock } from '../scheduler/clock.js';
import { REPOSITORY_ACTIONS, type AccessRequest, type Grant, type RepositoryAction } from './access.js';
import type { LoginGuard } from './login-guard.js';

export const SECRET_PREFIX = 'berth_';
/** how long a token's record read from the database is trusted (ms) */
export const CACHE_MS = 2000;
/** how often last uses are written (ms) */
export const LAST_USE_FLUSH_MS = 5000;
const CACHE_ENTRIES = 1000;
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** names auth.access gives a meaning */
const RESERVED = new Set(['anonymous']);

/** what the records are asked (ApiTokenRecords; tests may pass their own) */
export type ApiTokenStore = Pick<ApiTokenRecords, 'create' | 'get' | 'list' | 'revoke' | 'recordUses'>;

/** may the person who created a token (with their groups, when known) do this now? */
export type OwnerRights = (owner: string, groups: string[] | undefined, request: AccessRequest) => boolean;

/** a token request that is wrong (bad name, glob, actions or expiry): the message says which */
export class ApiTokenProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ApiTokenProblem';
  }
}

export interface NewToken {
  name: string;
  repositories: string[];
  actions: string[];
  /** ms from now; undefined: never expires */
  expiresInMs?: number;
  /** the person creating it (web interface); undefined from the command line */
  owner?: string;
  ownerGroups?: string[];
}

/** a token as listed: everything but its secret's hash */
export type TokenView = Omit<ApiTokenRecord, 'secretHash'> & { state: 'active' | 'expired' | 'revoked' };

/** how a login with a token's name and a `berth_` password ended */
export type TokenLogin = { grant: ApiTokenGrant } | { refused: string };

/** the rights of a verified token: its actions on the repositories its globs match, within its owner's */
export class ApiTokenGrant implements Grant {
  readonly user: string;
  private readonly patterns: RegExp[];
  private readonly actionSet: Set<string>;

  constructor(
    readonly token: ApiTokenRecord,
    private readonly ownerRights?: OwnerRights,
  ) {
    this.user = token.name;
    this.patterns = token.repositories.map(repositoryGlob);
    this.actionSet = new Set(token.actions);
  }

  /** the actions it grants on repository `name` */
  actions(name: string): Set<RepositoryAction> {
    return new Set(REPOSITORY_ACTIONS.filter((action) => this.allows({ type: 'repository', name, action })));
  }

  allows(request: AccessRequest): boolean {
    // the catalog: any authenticated caller; it lists only what the token may pull
    if (request.type === 'registry') return request.name === 'catalog';
    if (request.type !== 'repository' || !this.actionSet.has(request.action)) return false;
    if (!this.patterns.some((p) => p.test(request.name))) return false;
    const { owner, ownerGroups } = this.token;
    return owner === undefined || this.ownerRights === undefined || this.ownerRights(owner, ownerGroups, request);
  }
}

export class ApiTokens {
  private readonly cache = new Map<string, { record: ApiTokenRecord | undefined; at: number }>();
  private uses = new Map<string, string>();
  /** a hash compared when no token has the name, so a miss costs what a hit does */
  private readonly dummy = sha256(randomBytes(32).toString('base64url'));

  constructor(
    private readonly store: ApiTokenStore,
    private readonly clock: Clock,
    private readonly audit?: AuditSink,
  ) {}

  /** creates it and returns its secret (shown once: only its hash is kept); throws ApiTokenProblem or DuplicateTokenName */
  async create(input: NewToken, actor: string | undefined = input.owner): Promise<{ token: TokenView; secret: string }> {
    const problem = tokenProblem(input);
    if (problem) throw new ApiTokenProblem(problem);
    const secret = SECRET_PREFIX + randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const record: ApiTokenRecord = {
      name: input.name,
      secretHash: sha256(secret),
      repositories: [...new Set(input.repositories)],
      actions: REPOSITORY_ACTIONS.filter((a) => input.actions.includes(a)),
      ...(input.owner !== undefined ? { owner: input.owner } : {}),
      ...(input.ownerGroups !== undefined ? { ownerGroups: input.ownerGroups } : {}),
      created: new Date(now).toISOString(),
      ...(input.expiresInMs !== undefined ? { expires: new Date(now + input.expiresInMs).toISOString() } : {}),
    };
    await this.store.create(record);
    this.cache.delete(record.name);
    this.audit?.record({ actor, action: 'token.create', target: record.name, outcome: 'ok', detail: `${record.actions.join(',')} on ${record.repositories.join(', ')}` });
    return { token: this.view(record), secret };
  }

  /** every token, or the tokens `owner` created */
  async list(owner?: string): Promise<TokenView[]> {
    return (await this.store.list(owner)).map((r) => this.view(r));
  }

  /** revokes it (`owner` given: only a token that person created); false when there is no such active token */
  async revoke(name: string, options: { owner?: string; actor?: string } = {}): Promise<boolean> {
    const done = await this.store.revoke(name, new Date(this.clock.now()).toISOString(), options.owner);
    this.cache.delete(name);
    if (done) this.audit?.record({ actor: options.actor ?? options.owner, action: 'token.revoke', target: name, outcome: 'ok' });
    return done;
  }

  /**
   * Basic credentials: undefined when they are not a token's (no `berth_` password, or no token has
   * the name): the chain goes on. Otherwise the token decides; a wrong secret counts as a failed
   * login, and only once the secret is right does the refusal say why (revoked, expired).
   */
  async login(user: string, password: string, address: string, guard: LoginGuard | undefined, ownerRights?: OwnerRights): Promise<TokenLogin | undefined> {
    if (!password.startsWith(SECRET_PREFIX)) return undefined;
    const record = await this.read(user);
    if (!record) {
      equalHashes(sha256(password), this.dummy);
      return undefined;
    }
    let outcome: TokenLogin = { refused: 'invalid username or password' };
    const check = async () => {
      if (!equalHashes(sha256(password), record.secretHash)) return false;
      const dead = this.deadReason(record);
      outcome = dead ? { refused: `the API token ${JSON.stringify(record.name)} ${dead}` } : { grant: new ApiTokenGrant(record, ownerRights) };
      return dead === undefined;
    };
    if (guard) await guard.verify(user, address, check);
    else await check();
    if ('grant' in outcome) this.uses.set(record.name, new Date(this.clock.now()).toISOString());
    return outcome;
  }

  /** is the token still active? (a Bearer token the built-in issuer made for it asks on every request) */
  async live(name: string): Promise<boolean> {
    const record = await this.read(name);
    const ok = record !== undefined && this.deadReason(record) === undefined;
    if (ok) this.uses.set(name, new Date(this.clock.now()).toISOString());
    return ok;
  }

  /** writes the uses noted since the last flush (a failed write keeps them for the next) */
  async flushUses(): Promise<void> {
    if (this.uses.size === 0) return;
    const batch = this.uses;
    this.uses = new Map();
    try {
      await this.store.recordUses(batch);
    } catch (err) {
      for (const [name, at] of batch) if (!this.uses.has(name)) this.uses.set(name, at);
      throw err;
    }
  }

  private async read(name: string): Promise<ApiTokenRecord | undefined> {
    const now = this.clock.now();
    const kept = this.cache.get(name);
    if (kept && now - kept.at < CACHE_MS && now >= kept.at) return kept.record;
    const record = NAME.test(name) ? await this.store.get(name) : undefined;
    this.cache.delete(name);
    this.cache.set(name, { record, at: now });
    if (this.cache.size > CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    return record;
  }

  /** why the token no longer works, or undefined */
  private deadReason(record: ApiTokenRecord): string | undefined {
    if (record.revoked !== undefined) return `was revoked at ${record.revoked}`;
    if (record.expires !== undefined && Date.parse(record.expires) <= this.clock.now()) return `expired at ${record.expires}`;
    return undefined;
  }

  private view(record: ApiTokenRecord): TokenView {
    const { secretHash: _hash, ...rest } = record;
    const state = record.revoked !== undefined ? 'revoked' : record.expires !== undefined && Date.parse(record.expires) <= this.clock.now() ? 'expired' : 'active';
    return { ...rest, state };
  }
}

/** what is wrong with a new token's fields, or undefined */
export function tokenProblem(input: NewToken): string | undefined {
  if (!NAME.test(input.name)) return `token name ${JSON.stringify(input.name)}: use 1 to 64 letters, digits, ".", "_" or "-", starting with a letter or digit`;
  if (RESERVED.has(input.name)) return `token name ${JSON.stringify(input.name)} is reserved (auth.access uses it for requests without credentials)`;
  if (input.repositories.length === 0) return 'name at least one repository glob, e.g. "team/*" or "**"';
  const glob = input.repositories.find((g) => !isRepositoryGlob(g));
  if (glob !== undefined) return `repository glob ${JSON.stringify(glob)}: expected a glob such as "**", "team/*" or "team/app" (lowercase names, "*" within a component, "**" for any depth)`;
  return actionsProblem(input.actions) ?? (input.expiresInMs !== undefined && !(input.expiresInMs > 0) ? 'the expiry must be a positive duration, e.g. 90d or 12h' : undefined);
}

/** what is wrong with a list of actions, or undefined */
export function actionsProblem(actions: string[]): string | undefined {
  if (actions.length === 0) return `name at least one action: ${REPOSITORY_ACTIONS.join(', ')}`;
  const bad = actions.find((a) => !(REPOSITORY_ACTIONS as readonly string[]).includes(a));
  return bad !== undefined ? `action ${JSON.stringify(bad)}: the actions are ${REPOSITORY_ACTIONS.join(', ')}` : undefined;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('base64url');
}

function equalHashes(a: string, b: string): boolean {
  const x = Buffer.from(a, 'base64url');
  const y = Buffer.from(b, 'base64url');
  return x.length === y.length && timingSafeEqual(x, y);
}
