/** `/ui/registry`: version, storage, modes and the figures the registry keeps (for those who may read the whole catalog). */
import { getJSON } from '../api';
import { Status, useLoad } from '../components';

interface About {
  version: string;
  driver: string;
  readOnly: boolean;
  deletes: boolean;
  auth: string;
  mirrors: { prefix: string; remoteurl: string }[];
  notifications: { name: string; metrics: Record<string, unknown> }[];
  figures: Record<string, Record<string, number>>;
}

const yesNo = (on: boolean) => (on ? 'yes' : 'no');

export function Registry() {
  const loaded = useLoad('registry', () => getJSON<About>('/ui/api/registry', 'registry:catalog:*'));
  return (
    <section>
      <h1>Registry</h1>
      <Status loaded={loaded}>
        {(a) => (
          <>
            <dl class="facts">
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
            </dl>
            <h2>Notification endpoints</h2>
            {a.notifications.length === 0 ? (
              <p class="muted">None configured.</p>
            ) : (
              <table class="list">
                <thead>
                  <tr><th scope="col">Endpoint</th>{Object.keys(a.notifications[0].metrics).map((k) => <th scope="col" class="num">{k}</th>)}</tr>
                </thead>
                <tbody>
                  {a.notifications.map((n) => (
                    <tr key={n.name}><td>{n.name}</td>{Object.values(n.metrics).map((v) => <td class="num">{String(v)}</td>)}</tr>
                  ))}
                </tbody>
              </table>
            )}
            {Object.entries(a.figures).map(([section, figures]) => (
              <>
                <h2>{section}</h2>
                <dl class="facts">
                  {Object.entries(figures).map(([k, v]) => (
                    <>
                      <dt>{k}</dt>
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
