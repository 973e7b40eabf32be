/**
 * `/ui/registry`: version, storage, modes, health and the figures the registry keeps (notification
 * queues, garbage collection, the pull-through cache), for those who may read the catalog.
 */
import { getJSON } from '../api';
import { Status, useLoad } from '../components';
import type { RegistryAbout as About } from '../../wire';

const yesNo = (on: boolean) => (on ? 'yes' : 'no');

/** figures named like lastBytesFreed read as "last bytes freed" */
const words = (key: string) => key.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();

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
                      <dt>{words(k)}</dt>
                      <dd>{v}</dd>
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
