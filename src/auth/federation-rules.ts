/**
 * The rules of a federated issuer (auth.federation[].rules): each names the claims a token must
 * carry and, for a token that carries them, the repositories (globs) and actions it gets. The
 * first rule whose claims all match decides, in the order of the file (docs/decisions.md).
 *
 * A claim value in a rule is a glob: `*` stands for any run of characters, `/` and `:` included
 * (`acme/*`, `refs/heads/*`, `system:serviceaccount:ci:*`); anything else must be equal. A claim
 * is named as it appears in the token, or by a path into nested claims (`kubernetes.io/namespace`).
 * Strings, numbers and booleans compare as text; an array matches when one of its items does.
 *
 * A repository glob may hold `{{claim}}`: the claim's value, lower-cased, which must then be a
 * valid repository path (`acme/app`; never a glob character), else the rule does not match.
 */
import { repositoryGlob } from '../registry/names.js';
import type { AccessRequest, Grant, RepositoryAction } from './access.js';

export interface FederationRule {
  claims: Record<string, string>;
  repositories: string[];
  actions: RepositoryAction[];
}

/** auth.federation[] as authentication reads it */
export interface FederatedIssuerOptions {
  /** the readable prefix of subjects, `<name>:<sub>` */
  name: string;
  /** the exact `iss` */
  issuer: string;
  jwksuri?: string;
  /** the path of a JWKS file */
  jwks?: string;
  audience: string;
  algorithms: string[];
  rules: FederationRule[];
}

/** what a federated token may do: the matched rule's repositories and actions (and the catalog, filtered by pull) */
export class FederatedGrant implements Grant {
  private readonly patterns: RegExp[];

  constructor(
    /** `<issuer name>:<sub>` */
    readonly user: string,
    /** the repository globs after substitution */
    readonly repositories: string[],
    private readonly granted: ReadonlySet<RepositoryAction>,
    /** which rule decided, for the log (`rule 2 of github`) */
    readonly rule: string,
  ) {
    this.patterns = repositories.map(repositoryGlob);
  }

  /** the actions this grant allows on repository `name` */
  actions(name: string): Set<RepositoryAction> {
    return this.patterns.some((p) => p.test(name)) ? new Set(this.granted) : new Set();
  }

  allows(request: AccessRequest): boolean {
    // the catalog, as for any signed-in user: it lists only what the grant may pull
    if (request.type === 'registry') return request.name === 'catalog';
    return request.type === 'repository' && this.actions(request.name).has(request.action as RepositoryAction);
  }

  /** may pull every repository (a `**` glob with pull): the built-in issuer then grants the catalog scope */
  pullsEverything(): boolean {
    return this.granted.has('pull') && this.repositories.includes('**');
  }
}

/** the first rule whose claims match: its grant; else a sentence naming the claims the rules look at */
export function matchRules(issuer: FederatedIssuerOptions, subject: string, payload: Record<string, unknown>): FederatedGrant | string {
  for (const [i, rule] of issuer.rules.entries()) {
    if (!Object.entries(rule.claims).every(([path, glob]) => claimValues(payload, path).some((v) => claimGlob(glob).test(v)))) continue;
    const repositories = rule.repositories.map((glob) => substitute(glob, payload));
    if (repositories.some((r) => r === undefined)) continue;
    return new FederatedGrant(subject, repositories as string[], new Set(rule.actions), `rule ${i + 1} of ${issuer.name}`);
  }
  const looked = [...new Set(issuer.rules.flatMap((r) => [...Object.keys(r.claims), ...placeholders(r.repositories)]))];
  const shown = looked.map((path) => {
    const values = claimValues(payload, path);
    return `${path}=${values.length === 0 ? '(absent)' : values.map((v) => JSON.stringify(v)).join('|')}`;
  });
  return `no rule of issuer ${JSON.stringify(issuer.name)} matches the token's claims: ${shown.join(', ')}`;
}

/** the claim at `path` as text values (none when absent or an object) */
function claimValues(payload: Record<string, unknown>, path: string): string[] {
  let value: unknown = path in payload ? payload[path] : undefined;
  if (value === undefined && path.includes('/')) {
    value = payload;
    for (const part of path.split('/')) value = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[part] : undefined;
  }
  const items = Array.isArray(value) ? value : [value];
  return items.filter((v) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean').map(String);
}

const globCache = new Map<string, RegExp>();

function claimGlob(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) {
    re = new RegExp(`^${glob.split('*').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
    globCache.set(glob, re);
  }
  return re;
}

const PLACEHOLDER = /\{\{([A-Za-z0-9_.:/-]+)\}\}/g;
/** a valid repository path: what a substituted value must be, so a claim can never widen a glob */
const REPOSITORY_PATH = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;

function placeholders(globs: string[]): string[] {
  return globs.flatMap((g) => [...g.matchAll(PLACEHOLDER)].map((m) => m[1]));
}

/** `{{repository}}/*` with repository "Acme/App" -> `acme/app/*`; undefined when a value cannot stand in a name */
function substitute(glob: string, payload: Record<string, unknown>): string | undefined {
  let ok = true;
  const out = glob.replace(PLACEHOLDER, (_, path: string) => {
    const values = claimValues(payload, path);
    const value = values.length === 1 ? values[0].toLowerCase() : '';
    if (!REPOSITORY_PATH.test(value)) ok = false;
    return value;
  });
  return ok ? out : undefined;
}
