/**
 * `/ui/audit`: the audit log, newest first, filtered by repository, actor and action (each an
 * exact value, kept in the URL) and paged on the server (`/ui/api/audit`, src/ui/audit-api.ts).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { getJSON } from '../api';
import { Link, Status, Time, useLoad } from '../components';
import { href, navigate } from '../router';
import type { AuditPage } from '../../wire';

export interface AuditFilter {
  repository?: string;
  actor?: string;
  action?: string;
}

const FIELDS = ['repository', 'actor', 'action'] as const;

/** a filter as the URL holds it (an empty field is no field) */
const filterKey = (filter: AuditFilter) => JSON.stringify(FIELDS.map((key) => filter[key] || ''));

export function Audit({ filter, last }: { filter: AuditFilter; last?: string }) {
  const query = new URLSearchParams({ n: '50' });
  for (const key of FIELDS) if (filter[key]) query.set(key, filter[key]!);
  if (last) query.set('last', last);
  const loaded = useLoad(query.toString(), (signal) => getJSON<AuditPage>(`/ui/api/audit?${query}`, '', signal));
  const [form, setForm] = useState<AuditFilter>(filter);
  // the filter this form last applied (or was last set from): coming back from the URL it does not
  // overwrite keys typed since; a filter from elsewhere (back, forward, a link) replaces the form
  const shown = useRef(filterKey(filter));
  useEffect(() => {
    if (filterKey(filter) !== shown.current) setForm(filter);
    shown.current = filterKey(filter);
  }, [filter.repository, filter.actor, filter.action]);
  const apply = (e: Event) => {
    e.preventDefault();
    const applied = { repository: form.repository?.trim(), actor: form.actor?.trim(), action: form.action?.trim() };
    shown.current = filterKey(applied);
    navigate(href('/audit', applied));
  };
  return (
    <section>
      <h1>Audit log</h1>
      <form class="filters" aria-label="Filter the audit log" onSubmit={apply}>
        {FIELDS.map((key) => (
          <label key={key}>
            {key[0].toUpperCase() + key.slice(1)}{' '}
            <input name={key} value={form[key] ?? ''} autoComplete="off" onInput={(e) => setForm({ ...form, [key]: (e.target as HTMLInputElement).value })} />
          </label>
        ))}
        <button type="submit">Filter</button>
      </form>
      <Status loaded={loaded}>
        {(page) => (
          <>
            {page.records.length === 0 ? (
              <p class="muted">No record matches.</p>
            ) : (
              <table class="list audit">
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Actor</th>
                    <th scope="col">Address</th>
                    <th scope="col">Action</th>
                    <th scope="col">Repository</th>
                    <th scope="col">Target</th>
                    <th scope="col">Outcome</th>
                    <th scope="col">Detail</th>
                  </tr>
                </thead>
                <tbody>
                  {page.records.map((r, i) => (
                    <tr key={`${r.at}-${i}`}>
                      <td><Time at={r.at} /></td>
                      <td>{r.actor ?? <span class="muted">anonymous</span>}</td>
                      <td>{r.address ?? ''}</td>
                      <td>{r.action}</td>
                      <td>{r.repository ?? ''}</td>
                      <td>{r.target ?? ''}</td>
                      <td>{r.outcome}</td>
                      <td>{r.detail ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <nav class="pager" aria-label="Pages">
              {last && <Link href={href('/audit', { ...filter })}>Newest</Link>}
              {page.next && <Link href={href('/audit', { ...filter, last: page.next })} rel="next">Older</Link>}
            </nav>
          </>
        )}
      </Status>
    </section>
  );
}
