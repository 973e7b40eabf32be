/**
 * `/ui/registry`: version, storage, modes, health and the figures the registry keeps (notification
 * queues, garbage collection, the pull-through cache), for those who may read the catalog.
 */
import { getJSON } from '../api';
import { formatSize, Status, Time, useLoad } from '../components';
import type { RegistryAbout as About } from '../../wire';
import { QuotaTable } from './quotas';

const yesNo = (on: boolean) => (on ? 'yes' : 'no');

/** figures named like lastBytesFreed read as "last bytes freed" */
const words = (key: string) => key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

/** a duration in seconds as people read it: 850 ms, 12.4 s, 3 min 20 s, 2 h 5 min */
export function formatDuration(seconds: number): string {
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${Math.round(seconds % 60)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/**
 * a figure by what its name says it counts (the names /debug/vars has): bytes in KiB/MiB/...,
 * a point in time (…FinishedSeconds, seconds since 1970; 0: never) as a date, other seconds as a
 * duration, counts as numbers; the exact value stays in the title
 */
function Figure({ name, value }: { name: string; value: number }) {
  if (/Bytes/.test(name)) return <span title={`${value} bytes`}>{formatSize(value)}</span>;
  if (/(Finished|At)Seconds$/.test(name)) return value === 0 ? <span class="muted">never</span> : <Time at={new Date(value * 1000).toISOString()} />;
  if (/Seconds$/.test(name)) return <span title={`${value} s`}>{formatDuration(value)}</span>;
  return <>{value.toLocaleString('en')}</>;
}

export function Registry() {
  const loaded = useLoad('registry', () => getJSON<About>('/ui/api/registry', 'registry:catalog:*'));
  return (
    <section>
      <h1>Registry</h1>
      <Status loaded={loaded}>
        {(a) => (
          <>
            <dl class="facts" id="about">
              <dt>Version</dt>
              <dd>berth {a.version}</dd>
              <dt>Storage driver</dt>
              <dd>{a.driver}</dd>
              <dt>Authentication</dt>
              <dd>{a.auth}</dd>
              <dt>Read-only</dt>
              <dd>{yesNo(a.readOnly)}</dd>
              <dt>Deletes enabled</dt>
              <dd>{yesNo(a.deletes)}</dd>
              <dt>Mirror</dt>
              <dd>{a.mirrors.length === 0 ? 'no' : a.mirrors.map((m) => <div>{m.prefix ? `${m.prefix}/ ← ` : 'everything ← '}{m.remoteurl}</div>)}</dd>
              <dt>Health</dt>
              <dd>{a.healthy ? 'ready' : `failing: ${a.failing.join(', ')}`}</dd>
            </dl>
            {a.usage && (
              <>
                <h2>Storage use</h2>
                <p class="muted">Per top-level namespace you may see, each blob and manifest counted once however many repositories link it.</p>
                {a.usage.length === 0 ? (
                  <p class="muted">Nothing stored yet.</p>
                ) : (
                  <div class="scroll">
                    <table class="list" id="usage">
                      <thead>
                        <tr>
                          <th scope="col">Namespace</th>
                          <th scope="col" class="num">Repositories</th>
                          <th scope="col" class="num">Size</th>
                        </tr>
                      </thead>
                      <tbody>
                        {a.usage.map((u) => (
                          <tr key={u.namespace}>
                            <td>{u.namespace}</td>
                            <td class="num">{u.repositories.toLocaleString('en')}</td>
                            <td class="num" title={`${u.bytes} bytes`}>{formatSize(u.bytes)}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )}
              </>
            )}
            {a.quotas && a.quotas.length > 0 && <QuotaTable quotas={a.quotas} />}
            <h2>Notification endpoints</h2>
            {a.notifications.length === 0 ? (
              <p class="muted">None configured.</p>
            ) : (
              <div class="scroll">
                <table class="list" id="notifications">
                  <thead>
                    <tr>
                      <th scope="col">Endpoint</th>
                      {Object.keys(a.notifications[0].counters).map((k) => <th scope="col" class="num">{words(k)}</th>)}
                      <th scope="col">Answers</th>
                    </tr>
                  </thead>
                  <tbody>
                    {a.notifications.map((n) => (
                      <tr key={n.name}>
                        <td>{n.name}</td>
                        {Object.values(n.counters).map((v) => <td class="num">{v}</td>)}
                        <td>{Object.entries(n.statuses).map(([status, count]) => `${status}: ${count}`).join(', ') || '–'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {Object.entries(a.figures).map(([section, figures]) => (
              <>
                <h2>{section === 'gc' ? 'Garbage collection' : section === 'proxy' ? 'Pull-through cache' : section}</h2>
                <dl class="facts" id={`figures-${section}`}>
                  {Object.entries(figures).map(([k, v]) => (
                    <>
                      <dt>{words(k.replace(/Seconds$/, ''))}</dt>
                      <dd><Figure name={k} value={v} /></dd>
                    </>
                  ))}
                </dl>
              </>
            ))}
          </>
        )}
      </Status>
    </section>
  );
}
