/**
 * Access requests: what a request needs, in the resource:name:actions vocabulary of token scopes
 * (`repository:team/app:pull,push`, `registry:catalog:*`). What a request needs is decided at the
 * edge (src/http/route-table.ts) from its route and method.
 */
export const REPOSITORY_ACTIONS = ['pull', 'push', 'delete'] as const;
export type RepositoryAction = (typeof REPOSITORY_ACTIONS)[number];

export interface Scope {
  type: string;
  name: string;
  actions: string[];
}

export interface AccessRequest {
  type: 'repository' | 'registry';
  name: string;
  action: string;
}

export const CATALOG_ACCESS: AccessRequest = { type: 'registry', name: 'catalog', action: '*' };

/** `repository:a/b:pull,push` -> Scope; undefined for text that is no scope */
export function parseScope(text: string): Scope | undefined {
  // names may not contain ':', but a registry host with a port could appear in odd clients' names
  const first = text.indexOf(':');
  const last = text.lastIndexOf(':');
  if (first <= 0 || last === first) return undefined;
  const type = text.slice(0, first);
  const name = text.slice(first + 1, last);
  const actions = text.slice(last + 1).split(',').filter((a) => a !== '');
  if (name === '' || !/^[a-z0-9_-]+(\([a-z0-9_-]+\))?$/i.test(type)) return undefined;
  return { type: type.replace(/\(.*\)$/, ''), name, actions };
}

export function formatScope(scope: Scope): string {
  return `${scope.type}:${scope.name}:${scope.actions.join(',')}`;
}

/** access requests grouped as scopes (one per resource), for challenges */
export function toScopes(requests: AccessRequest[]): Scope[] {
  const scopes = new Map<string, Scope>();
  for (const r of requests) {
    const key = `${r.type}:${r.name}`;
    const scope = scopes.get(key) ?? { type: r.type, name: r.name, actions: [] };
    if (!scope.actions.includes(r.action)) scope.actions.push(r.action);
    scopes.set(key, scope);
  }
  return [...scopes.values()];
}

/** what a caller may do; the edge asks it, the core never sees it */
export interface Grant {
  /** the authenticated user, undefined for anonymous */
  readonly user: string | undefined;
  allows(request: AccessRequest): boolean;
}
