/**
 * `/ui/`: the repositories the user may pull with tag counts and last push (with the metadata
 * index: size and pulls too), searched and paged on the server (works for any catalog size). With
 * the index the search also finds tags, digests and label or annotation values (`/ui/api/search`).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { getJSON } from '../api';
import { Digest, formatSize, Link, Status, Time, useLoad } from '../components';
import { href, manifestHref, navigate, repositoryHref } from '../router';
import type { RepositoryPage as Page, SearchAnswer } from '../../wire';

export function Repositories({ q, last }: { q: string; last?: string }) {
  const query = new URLSearchParams({ n: '50', ...(q ? { q } : {}), ...(last ? { last } : {}) });
  const loaded = useLoad(query.toString(), (signal) => getJSON<Page>(`/ui/api/repositories?${query}`, '', signal));
  const [text, setText] = useState(q);
  const input = useRef<HTMLInputElement>(null);
  // the q this box last navigated to (or was last set from). Its own search coming back as `q` must
  // not overwrite the box: keys typed since it left would be lost ("cli" searched as "ci"). Only a
  // q from elsewhere (the back button, a link) replaces what the box holds.
  const shown = useRef(q);
  useEffect(() => {
    if (q !== shown.current) setText(q);
    shown.current = q;
  }, [q]);
  const search = (replace: boolean) => {
    shown.current = text.trim();
    navigate(href('/', { q: shown.current }), replace);
  };
  // typing searches after a pause, replacing the URL (one history entry per search, not per key)
  useEffect(() => {
    if (text === q) return;
    const timer = setTimeout(() => search(true), 250);
    return () => clearTimeout(timer);
  }, [text]);
  // `/` jumps to the search box, as on many sites
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === '/' && document.activeElement?.tagName !== 'INPUT') {
        e.preventDefault();
        input.current?.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
  return (
    <section>
      <h1>Repositories</h1>
      <form role="search" onSubmit={(e) => (e.preventDefault(), search(false))}>
        <label for="search">Search repositories</label>
        <input id="search" ref={input} type="search" value={text} placeholder="name contains…  (press / to search)" autoComplete="off" onInput={(e) => setText((e.target as HTMLInputElement).value)} />
      </form>
      <Status loaded={loaded}>
        {(page) => (
          <>
            {page.repositories.length === 0 ? (
              <p class="muted">{q ? `No repository you may pull has “${q}” in its name.` : 'No repository you may pull yet.'}</p>
            ) : (
              <table class="list">
                <thead>
                  <tr>
                    <th scope="col">Repository</th>
                    <th scope="col" class="num">Tags</th>
                    <th scope="col">Last push</th>
                    {page.indexed && <th scope="col" class="num">Size</th>}
                    {page.indexed && <th scope="col" class="num">Pulls</th>}
                  </tr>
                </thead>
                <tbody>
                  {page.repositories.map((r) => (
                    <tr key={r.name}>
                      <td><Link href={repositoryHref(r.name)}>{r.name}</Link></td>
                      <td class="num">{r.tags ?? '–'}</td>
                      <td>{(r.tags ?? 0) > page.pushLookup ? <span class="muted" title={`not looked up for more than ${page.pushLookup} tags: see the repository's tags`}>–</span> : <Time at={r.pushed} />}</td>
                      {page.indexed && <td class="num" title={`${r.size ?? 0} bytes`}>{formatSize(r.size)}</td>}
                      {page.indexed && <td class="num">{(r.pulls ?? 0).toLocaleString('en')}</td>}
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <nav class="pager" aria-label="Pages">
              {last && <Link href={href('/', { q })}>First page</Link>}
              {page.next && <Link href={href('/', { q, last: page.next })} rel="next">Next page</Link>}
            </nav>
            {page.indexed && q && !last && <Found q={q} />}
          </>
        )}
      </Status>
    </section>
  );
}

/** tags, digests and label or annotation values that start with `q` (the metadata index) */
function Found({ q }: { q: string }) {
  const loaded = useLoad(`search?${q}`, (signal) => getJSON<SearchAnswer>(`/ui/api/search?${new URLSearchParams({ q, n: '20' })}`, 'registry:catalog:*', signal));
  return (
    <section id="found" aria-label="Search results">
      <h2>Tags, digests and labels starting with “{q}”</h2>
      <Status loaded={loaded}>
        {(found) =>
          found.tags.length + found.digests.length + found.values.length === 0 ? (
            <p class="muted">No tag, digest, label or annotation you may pull starts with “{q}”.</p>
          ) : (
            <ul class="found">
              {found.tags.map((t) => (
                <li><Link href={manifestHref(t.repository, t.tag)}>{t.repository}:{t.tag}</Link> <span class="muted">tag</span></li>
              ))}
              {found.digests.map((d) => (
                <li><Link href={manifestHref(d.repository, d.digest)}>{d.repository}@<Digest digest={d.digest} /></Link> <span class="muted">digest</span></li>
              ))}
              {found.values.map((v) => (
                <li><Link href={manifestHref(v.repository, v.digest)}>{v.repository}@<Digest digest={v.digest} /></Link> <span class="muted">{v.kind} {v.key}=</span>{v.value}</li>
              ))}
              {found.truncated && <li class="muted">More match: type more of it.</li>}
            </ul>
          )
        }
      </Status>
    </section>
  );
}
