/** Pieces every view uses: links that stay in the page, data loading, sizes, dates, copy buttons. */
import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { APIError, signedInUser } from './api';
import { href, navigate } from './router';
import { settings } from './settings';
import { Raw } from './shape';
import { signInHref } from './sign-in';

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const onClick = (e: MouseEvent) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return; // a new tab or window keeps the browser's way
    e.preventDefault();
    navigate(props.href);
  };
  return <a {...props} onClick={onClick} />;
}

export interface Loaded<T> {
  data?: T;
  error?: APIError | Error;
  loading: boolean;
  reload(): void;
}

/** runs `load` whenever `key` changes; the request of an older key is aborted (its answer dropped) */
export function useLoad<T>(key: string, load: (signal: AbortSignal) => Promise<T>): Loaded<T> {
  const [state, setState] = useState<{ key: string; data?: T; error?: Error; loading: boolean }>({ key, loading: true });
  const [round, setRound] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    const current = () => !controller.signal.aborted;
    setState((s) => ({ key, data: s.key === key ? s.data : undefined, loading: true }));
    load(controller.signal).then(
      (data) => current() && setState({ key, data, loading: false }),
      (error: Error) => current() && setState({ key, error, loading: false }),
    );
    return () => controller.abort();
  }, [key, round]);
  return { ...state, reload: () => setRound((r) => r + 1) };
}

export function Problem({ error }: { error: Error }) {
  const status = error instanceof APIError ? error.status : 0;
  const signIn = settings.auth === 'token' && !settings.signIn && (status === 401 || status === 403) && !signedInUser();
  return (
    <div class="problem" role="alert">
      <p>{status === 403 ? 'You may not see this. ' : status === 401 ? 'Sign in to see this. ' : ''}{error.message}</p>
      {signIn && <Link href={href('/login', { next: location.pathname + location.search })}>Sign in</Link>}
      {settings.signIn && (status === 401 || status === 403) && !signedInUser() && <a href={signInHref()}>Sign in</a>}
    </div>
  );
}

export function Status<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (loaded.error) return <Problem error={loaded.error} />;
  if (loaded.data === undefined) return <p class="muted" aria-busy="true">Loading…</p>;
  return <>{children(loaded.data)}</>;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatSize(bytes: number | undefined): string {
  if (bytes === undefined) return '–';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${UNITS[unit]}`;
}

export function Time({ at }: { at?: unknown }) {
  if (at === undefined || at === null || at === '') return <span class="muted">–</span>;
  if (typeof at !== 'string') return <Raw value={at} />;
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return <span>{at}</span>;
  return <time dateTime={at} title={at}>{date.toISOString().slice(0, 16).replace('T', ' ')}</time>;
}

export const shortDigest = (digest: string) => digest.replace(/^(sha256:)?([0-9a-f]{12})[0-9a-f]*$/, '$1$2');

export function Digest({ digest }: { digest: unknown }) {
  if (typeof digest !== 'string') return <Raw value={digest} />;
  return <code class="digest" title={digest}>{shortDigest(digest)}</code>;
}

/** a command with a button that copies it (the clipboard needs a secure context; the text stays selectable) */
export function Copyable({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 1500);
    } catch {
      const range = document.createRange();
      const node = document.getElementById(`copy-${label}`);
      if (node) {
        range.selectNodeContents(node);
        getSelection()?.removeAllRanges();
        getSelection()?.addRange(range);
      }
    }
  };
  return (
    <div class="copyable">
      <code id={`copy-${label}`}>{text}</code>
      <button type="button" onClick={copy} aria-label={`Copy: ${text}`}>{copied ? 'Copied' : 'Copy'}</button>
    </div>
  );
}

/** what kind of thing a manifest is, in a word */
export function kindOf(mediaType: string, artifactType?: string): string {
  if (/index|list/.test(mediaType)) return 'index';
  if (artifactType && !/image\.config|container\.image/.test(artifactType)) return 'artifact';
  if (/v1\+prettyjws|v1\+json$/.test(mediaType) && mediaType.includes('docker')) return 'schema1';
  return 'image';
}

/** the signature mark where a signatures policy applies: "signed by <key>" or "not signed"; nothing elsewhere */
export function SignedMark({ by }: { by?: string[] }) {
  if (by === undefined) return null;
  return by.length > 0 ? <span class="signed" title="signed with cosign by a key the registry's policy trusts">signed by {by.join(', ')}</span> : <span class="signed unsigned">not signed</span>;
}
