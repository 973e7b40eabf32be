/** `/ui/repositories/<name>`: a page of its tags with digest, kind, size, platforms, build and push times; sortable. */
import { getJSON } from '../api';
import { Digest, formatSize, kindOf, Link, Status, Time, useLoad } from '../components';
import { href, manifestHref, repositoryHref } from '../router';
import type { Summary, TagPage as Page, TagRow } from '../../wire';

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

function sorted(rows: TagRow[], sort: string | undefined, desc: boolean): TagRow[] {
  if (!sort) return rows;
  const value = (r: TagRow) => {
    const v = (r as unknown as Record<string, unknown>)[sort];
    return Array.isArray(v) ? v.join(',') : (v as string | number | undefined);
  };
  return [...rows].sort((a, b) => {
    const x = value(a);
    const y = value(b);
    const order = x === y ? 0 : x === undefined ? 1 : y === undefined ? -1 : x < y ? -1 : 1;
    return desc ? -order : order;
  });
}

export function Repository({ name, last, sort, desc }: { name: string; last?: string; sort?: string; desc: boolean }) {
  const query = new URLSearchParams({ n: '25', ...(last ? { last } : {}) });
  const loaded = useLoad(`${name}?${query}`, () => getJSON<Page>(`/ui/api/repositories/${name}/tags/list?${query}`, `repository:${name}:pull`));
  return (
    <section>
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href={href('/')}>Repositories</Link> / <span aria-current="page">{name}</span>
      </nav>
      <h1>{name}</h1>
      <Status loaded={loaded}>
        {(page) => (
          <>
            <p class="muted">{page.total} tag{page.total === 1 ? '' : 's'}{page.total > page.tags.length ? `; sorting applies to this page of ${page.tags.length}` : ''}</p>
            {page.tags.length > 0 && (
              <div class="scroll">
                <table class="list">
                  <thead>
                    <tr>
                      {COLUMNS.map((c) => {
                        const active = sort === c.key;
                        const next = repositoryHref(name, { last, sort: c.key, desc: active && !desc ? '1' : undefined });
                        return (
                          <th scope="col" class={[c.num && 'num', c.wide && 'wide'].filter(Boolean).join(' ')} aria-sort={active ? (desc ? 'descending' : 'ascending') : undefined}>
                            <Link href={next}>{c.label}{active ? (desc ? ' ↓' : ' ↑') : ''}</Link>
                          </th>
                        );
                      })}
                    </tr>
                  </thead>
                  <tbody>
                    {sorted(page.tags, sort, desc).map((t) => (
                      <tr key={t.tag}>
                        <td><Link href={manifestHref(name, t.tag)}>{t.tag}</Link></td>
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
              {last && <Link href={repositoryHref(name, { sort, desc: desc ? '1' : undefined })}>First page</Link>}
              {page.next && <Link href={repositoryHref(name, { last: page.next, sort, desc: desc ? '1' : undefined })} rel="next">Next page</Link>}
            </nav>
          </>
        )}
      </Status>
    </section>
  );
}
