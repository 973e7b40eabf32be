/** The quotas of the `policies:` block with their use, on the registry page (the same figures as /v2/_berth/ext/quotas). */
import { formatSize } from '../components';
import type { QuotaUse } from '../../wire';

const share = (used: number, allowed: number | undefined) => (allowed === undefined ? '' : ` (${Math.round((100 * used) / allowed)} %)`);

export function QuotaTable({ quotas }: { quotas: QuotaUse[] }) {
  return (
    <>
      <h2>Quotas</h2>
      <p class="muted">Each quota counts every repository its globs match, each blob and manifest a pushed image holds once.</p>
      <div class="scroll">
        <table class="list" id="quotas">
          <thead>
            <tr>
              <th scope="col">Repositories</th>
              <th scope="col" class="num">Size used</th>
              <th scope="col" class="num">Size allowed</th>
              <th scope="col" class="num">Repositories used</th>
              <th scope="col" class="num">Repositories allowed</th>
            </tr>
          </thead>
          <tbody>
            {quotas.map((q) => (
              <tr key={q.policy}>
                <td title={q.policy}>{q.repositories.join(', ')}</td>
                <td class="num" title={`${q.use.bytes} bytes`}>{formatSize(q.use.bytes) + share(q.use.bytes, q.quota.bytes)}</td>
                <td class="num">{q.quota.bytes === undefined ? '—' : formatSize(q.quota.bytes)}</td>
                <td class="num">{q.use.repositories.toLocaleString('en') + share(q.use.repositories, q.quota.repositories)}</td>
                <td class="num">{q.quota.repositories === undefined ? '—' : q.quota.repositories.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
