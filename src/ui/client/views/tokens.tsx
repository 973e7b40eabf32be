/**
 * `/ui/tokens`: the signed-in person's API tokens (robot accounts): list, create (the secret is
 * shown once, with the `docker login` line), revoke. The registry refuses a glob or action the
 * person does not have, and says which.
 */
import { useState } from 'preact/hooks';
import { errorOf, getJSON, request } from '../api';
import { Copyable, Status, Time, useLoad } from '../components';
import { settings } from '../settings';
import type { CreatedToken, NewTokenRequest, TokenList } from '../../tokens-wire';

const ACTIONS = ['pull', 'push', 'delete'] as const;

export function Tokens() {
  const loaded = useLoad('tokens', () => getJSON<TokenList>('/ui/api/tokens'));
  const [created, setCreated] = useState<CreatedToken>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const send = async (path: string, init: RequestInit): Promise<Response | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      const res = await request(`/ui/api/tokens${path}`, init);
      if (!res.ok) {
        setError((await errorOf(res)).message);
        return undefined;
      }
      return res;
    } finally {
      setBusy(false);
    }
  };

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const data = new FormData(form);
    const days = String(data.get('expires') ?? '').trim();
    const body: NewTokenRequest = {
      name: String(data.get('name') ?? '').trim(),
      repositories: String(data.get('repositories') ?? '').split(/[\s,]+/).filter((g) => g !== ''),
      actions: ACTIONS.filter((a) => data.get(a) === 'on'),
      ...(days !== '' ? { expires: Number(days) } : {}),
    };
    const res = await send('', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res) return;
    setCreated((await res.json()) as CreatedToken);
    form.reset();
    loaded.reload();
  };

  const revoke = async (name: string) => {
    if (!confirm(`Revoke the API token ${name}? Every client using it is refused within seconds.`)) return;
    if (await send(`/${encodeURIComponent(name)}`, { method: 'DELETE' })) loaded.reload();
  };

  const host = settings.host ?? location.host;
  return (
    <section>
      <h1>API tokens</h1>
      <p class="muted">Tokens for machines (CI jobs, deployments): the token's name is the user name and its secret the password of <code>docker login</code>, <code>podman login</code> and <code>skopeo --creds</code>. A token never does more than you may.</p>
      {created && (
        <div class="created" role="status" id="created-token">
          <p>Created <strong>{created.token.name}</strong>. Copy its secret now: it is not shown again.</p>
          <Copyable text={created.secret} label="secret" />
          <Copyable text={`docker login -u ${created.token.name} --password-stdin ${host}`} label="login-command" />
        </div>
      )}
      {error && <p class="problem" role="alert">{error}</p>}
      <form id="new-token" onSubmit={create}>
        <label for="token-name">Name</label>
        <input id="token-name" name="name" required pattern="[A-Za-z0-9][A-Za-z0-9._\-]{0,63}" />
        <label for="token-repositories">Repositories (globs such as team/* or **)</label>
        <input id="token-repositories" name="repositories" required />
        <fieldset>
          <legend>Actions</legend>
          {ACTIONS.map((a) => (
            <label>
              <input type="checkbox" name={a} defaultChecked={a === 'pull'} /> {a}
            </label>
          ))}
        </fieldset>
        <label for="token-expires">Expires after (days; empty: never)</label>
        <input id="token-expires" name="expires" type="number" min="1" step="1" value="90" />
        <button type="submit" disabled={busy}>Create token</button>
      </form>
      <Status loaded={loaded}>
        {(list) =>
          list.tokens.length === 0 ? (
            <p class="muted">You have no API tokens.</p>
          ) : (
            <table id="tokens">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Repositories</th>
                  <th>Actions</th>
                  <th>State</th>
                  <th>Created</th>
                  <th>Expires</th>
                  <th>Last used</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.tokens.map((t) => (
                  <tr data-token={t.name}>
                    <td>{t.name}</td>
                    <td>{t.repositories.join(', ')}</td>
                    <td>{t.actions.join(', ')}</td>
                    <td>{t.state}</td>
                    <td><Time at={t.created} /></td>
                    <td>{t.expires ? <Time at={t.expires} /> : <span class="muted">never</span>}</td>
                    <td>{t.lastUsed ? <Time at={t.lastUsed} /> : <span class="muted">never</span>}</td>
                    <td>{t.state === 'active' && <button type="button" disabled={busy} onClick={() => void revoke(t.name)}>Revoke</button>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Status>
    </section>
  );
}
