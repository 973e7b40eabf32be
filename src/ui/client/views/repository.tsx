/** `/ui/repositories/<name>`: a page of its tags with digest, kind, size, platforms, build and push times; sortable by each over the whole list. */
import { getJSON } from '../api';
import { Digest, formatSize, kindOf, Link, SignedMark, Status, Time, useLoad } from '../components';
import { href, manifestHref, repositoryHref } from '../router';
import type { Summary, TagPage as Page } from '../../wire';

/** `wide`: left out on a phone (the manifest's page has them) */
const COLUMNS: { key: keyof Summary | 'tag' | 'pushed'; label: string; num?: boolean; wide?: boolean }[] = [
  { key: 'tag', label: 'Tag' },
  { key: 'digest', label: 'Digest', wide: true },
  { key: 'mediaType', label: 'Kind' },
  { key: 'size', label: 'Size', num: true },
  { key: 'platforms', label: 'Platforms' },
  { key: 'created', label: 'Created', wide: true },
  { key: 'pushed', label: 'Pushed', wide: true },
];

export function Repository({ name, last, from, sort, desc }: { name: string; last?: string; from?: string; sort?: string; desc: boolean }) {
  // sorted on the server over the whole list (tag-list.ts), so every page follows the same order
  const query = new URLSearchParams({ n: '25', ...(sort ? { sort } : {}), ...(desc ? { desc: '1' } : {}), ...(last ? { last } : {}), ...(from ? { from } : {}) });
  const loaded = useLoad(`${name}?${query}`, () => getJSON<Page>(`/ui/api/repositories/${name}/tags/list?${query}`, `repository:${name}:pull`));
  const order = { sort, desc: desc ? '1' : undefined };
  const label = COLUMNS.find((c) => c.key === sort)?.label.toLowerCase();
  return (
    <section>
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href={href('/')}>Repositories</Link> / <span aria-current="page">{name}</span>
      </nav>
      <h1>{name}</h1>
      <Status loaded={loaded}>
        {(page) => (
          <>
            <p class="muted">
              {page.total} tag{page.total === 1 ? '' : 's'}
              {page.sortedAmong !== undefined && (
                <>; sorted by {label} among the first {page.sortedAmong.toLocaleString('en')} by name only (the others are not on these pages: <Link href={repositoryHref(name)}>sort by tag</Link> to see every tag)</>
              )}
            </p>
            {page.tags.length > 0 && (
              <div class="scroll">
                <table class="list">
                  <thead>
                    <tr>
                      {COLUMNS.map((c) => {
                        const active = (sort ?? 'tag') === c.key;
                        const next = repositoryHref(name, { sort: c.key === 'tag' ? undefined : c.key, desc: active && !desc ? '1' : undefined });
                        return (
                          <th scope="col" class={[c.num && 'num', c.wide && 'wide'].filter(Boolean).join(' ')} aria-sort={active ? (desc ? 'descending' : 'ascending') : undefined}>
                            <Link href={next}>{c.label}{active ? (desc ? ' ↓' : ' ↑') : ''}</Link>
                          </th>
                        );
                      })}
                    </tr>
                  </thead>
                  <tbody>
                    {page.tags.map((t) => (
                      <tr key={t.tag}>
                        <td><Link href={manifestHref(name, t.tag)}>{t.tag}</Link>{'signedBy' in t && <SignedMark by={t.signedBy} />}</td>
                        {'error' in t ? (
                          <td colSpan={6} class="muted">{t.error}</td>
                        ) : (
                          <>
                            <td class="wide"><Link href={manifestHref(name, t.digest)}><Digest digest={t.digest} /></Link></td>
                            <td title={t.mediaType}>{kindOf(t.mediaType, t.artifactType)}</td>
                            <td class="num">{formatSize(t.size)}</td>
                            <td>{t.platforms.join(', ') || '–'}</td>
                            <td class="wide"><Time at={t.created} /></td>
                            <td class="wide"><Time at={t.pushed} /></td>
                          </>
                        )}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            <nav class="pager" aria-label="Pages">
              {(last || from) && <Link href={repositoryHref(name, order)}>First page</Link>}
              {page.next && <Link href={repositoryHref(name, { ...order, ...page.next })} rel="next">Next page</Link>}
            </nav>
          </>
        )}
      </Status>
    </section>
  );
}
