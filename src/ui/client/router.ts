/** Views by URL, in the History API: every view has a URL that a reload or a shared link opens again. */
import { useEffect, useState } from 'preact/hooks';
import { settings } from './settings';

export const UI = `${settings.prefix}/ui`;

export type View =
  | { kind: 'repositories'; q: string; last?: string }
  | { kind: 'repository'; name: string; last?: string; from?: string; sort?: string; desc: boolean }
  | { kind: 'manifest'; name: string; reference: string }
  | { kind: 'registry' }
  | { kind: 'audit'; filter: { repository?: string; actor?: string; action?: string }; last?: string }
  | { kind: 'login'; next?: string }
  | { kind: 'tokens' }
  | { kind: 'missing'; path: string };

const MANIFEST_PATH = /^\/repositories\/(.+)\/manifests\/([^/]+)$/;

export function parseView(pathname: string, search: string): View {
  const query = new URLSearchParams(search);
  const path = pathname.startsWith(UI) ? pathname.slice(UI.length) : pathname;
  const last = query.get('last') || undefined;
  let m: RegExpExecArray | null;
  if (path === '/' || path === '') return { kind: 'repositories', q: query.get('q') ?? '', last };
  if (path === '/registry') return { kind: 'registry' };
  if (path === '/audit') return { kind: 'audit', filter: { repository: query.get('repository') || undefined, actor: query.get('actor') || undefined, action: query.get('action') || undefined }, last };
  if (path === '/tokens') return { kind: 'tokens' };
  if (path === '/login') return { kind: 'login', next: query.get('next') ?? undefined };
  // a path ending in `/manifests/<one segment>` is a manifest (the name is everything before that
  // last `/manifests/`); a repository whose own name ends so is written with its last `/` as %2F
  if ((m = MANIFEST_PATH.exec(path))) return { kind: 'manifest', name: decodeURIComponent(m[1]), reference: decodeURIComponent(m[2]) };
  if ((m = /^\/repositories\/(.+)$/.exec(path))) return { kind: 'repository', name: decodeURIComponent(m[1]), last, from: query.get('from') || undefined, sort: query.get('sort') || undefined, desc: query.get('desc') === '1' };
  return { kind: 'missing', path: pathname };
}

/** a URL of the interface: `href('/repositories/a/b', { last: 'x' })` */
export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value) params.set(key, value);
  const search = params.toString();
  return `${UI}${path}${search ? `?${search}` : ''}`;
}

/** a repository's page: its name as it is, unless it would read as a manifest's path (`a/manifests/b`) */
export function repositoryHref(name: string, query: Record<string, string | undefined> = {}): string {
  const path = `/repositories/${name}`;
  return href(MANIFEST_PATH.test(path) ? path.replace(/\/([^/]+)$/, '%2F$1') : path, query);
}
export const manifestHref = (name: string, reference: string) => href(`/repositories/${name}/manifests/${reference}`);

export function navigate(url: string, replace = false): void {
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  dispatchEvent(new PopStateEvent('popstate'));
}

export function useView(): View {
  const read = () => parseView(location.pathname, location.search);
  const [view, setView] = useState(read);
  useEffect(() => {
    const changed = () => setView(read());
    addEventListener('popstate', changed);
    return () => removeEventListener('popstate', changed);
  }, []);
  return view;
}
