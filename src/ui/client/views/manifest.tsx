/**
 * `/ui/repositories/<name>/manifests/<tag or digest>`: what the manifest is (layers, image config,
 * an index's platforms), what refers to it (signatures, SBOMs, attestations), how to pull it, and
 * deleting it when the registry allows deletes.
 */
import { useRef, useState } from 'preact/hooks';
import { APIError, errorOf, getJSON, request } from '../api';
import { Copyable, Digest, formatSize, kindOf, Link, Problem, SignedMark, Status, Time, useLoad } from '../components';
import { href, manifestHref, navigate, repositoryHref } from '../router';
import { plainHTTP, registryHost, settings } from '../settings';
import { isRecord, isSize, isText, isTexts, Raw, Text } from '../shape';
import type { Descriptor, ImageConfig, ManifestDetail as Detail, Summary, Unreadable } from '../../wire';

const isDigestRef = (reference: string) => reference.includes(':');

export function Manifest({ name, reference }: { name: string; reference: string }) {
  const loaded = useLoad(`${name}@${reference}`, () => getJSON<Detail>(`/ui/api/repositories/${name}/manifests/${reference}`, `repository:${name}:pull`));
  return (
    <section>
      <nav class="crumbs" aria-label="Breadcrumb">
        <Link href={href('/')}>Repositories</Link> / <Link href={repositoryHref(name)}>{name}</Link> / <span aria-current="page">{isDigestRef(reference) ? <Digest digest={reference} /> : reference}</span>
      </nav>
      <Status loaded={loaded}>{(d) => <Details detail={d} reference={reference} />}</Status>
      {loaded.error instanceof APIError && loaded.error.status === 404 && !isDigestRef(reference) && (
        <p>
          This address names the manifest {reference} of {name}. Looking for the repository <Link href={repositoryHref(`${name}/manifests/${reference}`)}>{name}/manifests/{reference}</Link>?
        </p>
      )}
    </section>
  );
}

function Details({ detail: d, reference }: { detail: Detail; reference: string }) {
  const artifactType = d.manifest.artifactType ?? d.summary.artifactType;
  const kind = kindOf(d.mediaType, isText(artifactType) ? artifactType : undefined);
  return (
    <>
      <h1>
        {d.name}
        {isDigestRef(reference) ? '@' : ':'}
        {isDigestRef(reference) ? <Digest digest={reference} /> : reference}
      </h1>
      <dl class="facts">
        <dt>Digest</dt>
        <dd><code class="wrap">{d.digest}</code></dd>
        <dt>Kind</dt>
        <dd>{kind} <span class="muted">({d.mediaType}{d.manifest.artifactType !== undefined && <>, <Text value={d.manifest.artifactType} /></>})</span></dd>
        <dt>Size</dt>
        <dd>{formatSize(d.summary.size)} <span class="muted">(manifest {formatSize(d.bytes)})</span></dd>
        <dt>Platforms</dt>
        <dd>{d.summary.platforms.join(', ') || '–'}</dd>
        <dt>Created</dt>
        {/* the summary's is a string; a config's `created` of another shape is shown raw */}
        <dd><Time at={d.summary.created ?? d.config?.created} /></dd>
        <dt>Pushed</dt>
        <dd><Time at={d.pushed} /></dd>
        {d.signedBy !== undefined && (
          <>
            <dt>Signature</dt>
            <dd><SignedMark by={d.signedBy} /></dd>
          </>
        )}
        <dt>Tags</dt>
        <dd>{d.tags.tags.length ? d.tags.tags.map((t) => <Link class="tag" href={manifestHref(d.name, t)}>{t}</Link>) : <span class="muted">none</span>}</dd>
        {d.manifest.subject && (
          <>
            <dt>Refers to</dt>
            <dd>{isText(d.manifest.subject.digest) ? <Link href={manifestHref(d.name, d.manifest.subject.digest)}><Digest digest={d.manifest.subject.digest} /></Link> : <Raw value={d.manifest.subject} />}</dd>
          </>
        )}
      </dl>
      {kind === 'artifact' ? (
        <ArtifactCommands name={d.name} reference={reference} digest={d.digest} subject={isText(d.manifest.subject?.digest) ? d.manifest.subject.digest : undefined} signature={isText(artifactType) && /cosign|sigstore/.test(artifactType)} />
      ) : (
        <PullCommands name={d.name} reference={reference} digest={d.digest} />
      )}
      {d.children && <Platforms name={d.name} children={d.children} />}
      {Array.isArray(d.manifest.layers) && <Layers layers={d.manifest.layers} config={d.manifest.config} />}
      {d.config && <Config config={d.config} />}
      <Referrers name={d.name} referrers={d.referrers} />
      {isRecord(d.manifest.annotations) && <Annotations annotations={d.manifest.annotations} />}
      <details>
        <summary>Manifest JSON</summary>
        <pre class="json">{JSON.stringify(d.manifest, null, 2)}</pre>
      </details>
      {settings.deletes && !settings.readOnly && (d.mayDelete || settings.auth === 'token') && <Delete detail={d} />}
    </>
  );
}

/** the references of the manifest: by tag (when the page names one) and by digest */
function references(name: string, reference: string, digest: string): string[] {
  const host = registryHost();
  return [...(isDigestRef(reference) ? [] : [`${host}/${name}:${reference}`]), `${host}/${name}@${digest}`];
}

/** `flag ` when the registry is reached over plain HTTP, for the clients that need a switch for it */
const onPlainHTTP = (flag: string) => (plainHTTP() ? `${flag} ` : '');

function PullCommands({ name, reference, digest }: { name: string; reference: string; digest: string }) {
  const refs = references(name, reference, digest);
  return (
    <section aria-labelledby="pull">
      <h2 id="pull">Pull</h2>
      {plainHTTP() && (
        <p class="muted" id="plain-http">
          This registry is reached over plain HTTP: podman, skopeo and crane carry their switch for it; docker pulls over HTTP only from a host in its daemon's <code>insecure-registries</code> (daemon.json; 127.0.0.0/8 always).
        </p>
      )}
      {refs.map((ref, i) => (
        <div class="commands" key={ref}>
          <h3>{i === 0 && refs.length > 1 ? 'By tag' : 'By digest'}</h3>
          <Copyable label={`docker-${i}`} text={`docker pull ${ref}`} />
          <Copyable label={`podman-${i}`} text={`podman pull ${onPlainHTTP('--tls-verify=false')}${ref}`} />
          <Copyable label={`skopeo-${i}`} text={`skopeo copy ${onPlainHTTP('--src-tls-verify=false')}docker://${ref} oci:${name.split('/').pop()}`} />
          <Copyable label={`crane-${i}`} text={`crane pull ${onPlainHTTP('--insecure')}${ref} ${name.split('/').pop()}.tar`} />
        </div>
      ))}
    </section>
  );
}

/** an artifact (signature, SBOM, attestation, ...) is fetched with oras, and what refers to an image is listed by oras and cosign */
function ArtifactCommands({ name, reference, digest, subject, signature }: { name: string; reference: string; digest: string; subject?: string; signature: boolean }) {
  const refs = references(name, reference, digest);
  const oras = onPlainHTTP('--plain-http');
  const cosign = onPlainHTTP('--allow-http-registry');
  const image = subject && `${registryHost()}/${name}@${subject}`;
  return (
    <section aria-labelledby="pull">
      <h2 id="pull">Fetch</h2>
      {refs.map((ref, i) => (
        <div class="commands" key={ref}>
          <h3>{i === 0 && refs.length > 1 ? 'By tag' : 'By digest'}</h3>
          <Copyable label={`oras-pull-${i}`} text={`oras pull ${oras}${ref}`} />
          <Copyable label={`oras-manifest-${i}`} text={`oras manifest fetch ${oras}${ref}`} />
        </div>
      ))}
      {image && (
        <div class="commands">
          <h3>The image it refers to</h3>
          <Copyable label="oras-discover" text={`oras discover ${oras}${image}`} />
          <Copyable label="cosign-tree" text={`cosign tree ${cosign}${image}`} />
          {signature && <Copyable label="cosign-verify" text={`cosign verify ${cosign}--key cosign.pub ${image}`} />}
        </div>
      )}
    </section>
  );
}

function Platforms({ name, children }: { name: string; children: (Summary | Unreadable)[] }) {
  return (
    <section aria-labelledby="platforms">
      <h2 id="platforms">Platforms</h2>
      <table class="list">
        <thead>
          <tr><th scope="col">Platform</th><th scope="col">Manifest</th><th scope="col" class="num">Size</th><th scope="col">Created</th></tr>
        </thead>
        <tbody>
          {children.map((c) =>
            'error' in c ? (
              <tr key={c.digest}>
                <td class="muted">unreadable</td>
                <td><Digest digest={c.digest} /></td>
                <td colSpan={2} class="muted">{c.error}</td>
              </tr>
            ) : (
              <tr key={c.digest}>
                <td>{c.platforms.join(', ') || kindOf(c.mediaType, c.artifactType)}</td>
                <td><Link href={manifestHref(name, c.digest)}><Digest digest={c.digest} /></Link></td>
                <td class="num">{formatSize(c.size)}</td>
                <td><Time at={c.created} /></td>
              </tr>
            ),
          )}
        </tbody>
      </table>
    </section>
  );
}

function Layers({ layers, config }: { layers: Descriptor[]; config?: Descriptor }) {
  return (
    <section aria-labelledby="layers">
      <h2 id="layers">Layers</h2>
      <table class="list">
        <thead>
          <tr><th scope="col" class="num">#</th><th scope="col">Digest</th><th scope="col">Media type</th><th scope="col" class="num">Size</th></tr>
        </thead>
        <tbody>
          {isRecord(config) && (
            <tr class="muted"><td class="num">config</td><td><Digest digest={config.digest} /></td><td><Text value={config.mediaType} /></td><td class="num"><Size value={config.size} /></td></tr>
          )}
          {layers.map((l: unknown, i) =>
            isRecord(l) ? (
              <tr key={i}><td class="num">{i + 1}</td><td><Digest digest={l.digest} /></td><td><Text value={l.mediaType} /></td><td class="num"><Size value={l.size} /></td></tr>
            ) : (
              <tr key={i}><td class="num">{i + 1}</td><td colSpan={3}><Raw value={l} /></td></tr>
            ),
          )}
        </tbody>
      </table>
    </section>
  );
}

/** the image config as stored: every field checked, one of another shape shown raw (shape.tsx) */
function Size({ value }: { value: unknown }) {
  return isSize(value) ? <>{formatSize(value)}</> : value === undefined ? <>–</> : <Raw value={value} />;
}

function Config({ config }: { config: ImageConfig }) {
  const c = isRecord(config.config) ? config.config : {};
  // [label, the stored value, its text when it has the specification's shape]
  const rows: [string, unknown, string | undefined][] = [
    ['Entrypoint', c.Entrypoint, isTexts(c.Entrypoint) ? c.Entrypoint.join(' ') : undefined],
    ['Cmd', c.Cmd, isTexts(c.Cmd) ? c.Cmd.join(' ') : undefined],
    ['Working directory', c.WorkingDir, isText(c.WorkingDir) ? c.WorkingDir : undefined],
    ['User', c.User, isText(c.User) ? c.User : undefined],
    ['Ports', c.ExposedPorts, isRecord(c.ExposedPorts) ? Object.keys(c.ExposedPorts).join(', ') : undefined],
    ['Author', config.author, isText(config.author) ? config.author : undefined],
  ];
  const { Env: env, Labels: labels } = c;
  const history = config.history;
  return (
    <section aria-labelledby="config">
      <h2 id="config">Image config</h2>
      <dl class="facts">
        {config.config !== undefined && config.config !== null && !isRecord(config.config) && (
          <>
            <dt>Config</dt>
            <dd><Raw value={config.config} /></dd>
          </>
        )}
        {rows.filter(([, value, text]) => value !== undefined && value !== null && text !== '').map(([k, value, text]) => (
          <>
            <dt>{k}</dt>
            <dd>{text !== undefined ? <code class="wrap">{text}</code> : <Raw value={value} />}</dd>
          </>
        ))}
      </dl>
      {env !== undefined && env !== null && (!isTexts(env) || env.length > 0) && (
        <>
          <h3>Environment</h3>
          {isTexts(env) ? <ul class="plain">{env.map((e) => <li><code class="wrap">{e}</code></li>)}</ul> : <p><Raw value={env} /></p>}
        </>
      )}
      {labels !== undefined && labels !== null && (!isRecord(labels) || Object.keys(labels).length > 0) && (
        <>
          <h3>Labels</h3>
          {isRecord(labels) ? <Annotations annotations={labels} bare /> : <p><Raw value={labels} /></p>}
        </>
      )}
      {Array.isArray(history) && history.length > 0 && (
        <details>
          <summary>History ({history.length} steps)</summary>
          <ol class="history">
            {history.map((h: unknown) =>
              isRecord(h) ? (
                <li class={h.empty_layer === true ? 'muted' : ''}><Time at={h.created} /> <code class="wrap">{isText(h.created_by) ? h.created_by : isText(h.comment) ? h.comment : h.created_by === undefined && h.comment === undefined ? '' : <Raw value={h.created_by ?? h.comment} />}</code></li>
              ) : (
                <li><Raw value={h} /></li>
              ),
            )}
          </ol>
        </details>
      )}
      {history !== undefined && history !== null && !Array.isArray(history) && (
        <>
          <h3>History</h3>
          <p><Raw value={history} /></p>
        </>
      )}
    </section>
  );
}

function Annotations({ annotations, bare }: { annotations: Record<string, unknown>; bare?: boolean }) {
  const list = (
    <dl class="facts">
      {Object.entries(annotations).map(([k, v]) => (
        <>
          <dt><code>{k}</code></dt>
          <dd class="wrap"><Text value={v} /></dd>
        </>
      ))}
    </dl>
  );
  if (bare) return list;
  return (
    <section aria-labelledby="annotations">
      <h2 id="annotations">Annotations</h2>
      {list}
    </section>
  );
}

function Referrers({ name, referrers }: { name: string; referrers: Descriptor[] }) {
  return (
    <section aria-labelledby="referrers">
      <h2 id="referrers">Referrers</h2>
      {referrers.length === 0 ? (
        <p class="muted">Nothing refers to this manifest (no signature, SBOM or attestation).</p>
      ) : (
        <table class="list">
          <thead>
            <tr><th scope="col">Artifact type</th><th scope="col">Manifest</th><th scope="col" class="num">Size</th><th scope="col">Created</th></tr>
          </thead>
          <tbody>
            {[...referrers].sort((a, b) => String(a.artifactType ?? '').localeCompare(String(b.artifactType ?? ''))).map((r, i) => (
              <tr key={i}>
                <td><Text value={r.artifactType ?? r.mediaType} /></td>
                <td>{isText(r.digest) ? <Link href={manifestHref(name, r.digest)}><Digest digest={r.digest} /></Link> : <Raw value={r.digest} />}</td>
                <td class="num"><Size value={r.size} /></td>
                <td><Time at={isRecord(r.annotations) ? r.annotations['org.opencontainers.image.created'] : undefined} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** DELETE of the manifest by digest through the V2 API, after a confirmation that says what goes with it */
function Delete({ detail: d }: { detail: Detail }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const res = await request(`/v2/${d.name}/manifests/${d.digest}`, { method: 'DELETE' }, `repository:${d.name}:delete`);
      if (res.status !== 202) throw await errorOf(res);
      dialog.current?.close();
      navigate(repositoryHref(d.name));
    } catch (err) {
      setError(err as Error);
    } finally {
      setBusy(false);
    }
  };
  const tags = d.tags.tags;
  return (
    <section aria-labelledby="delete" class="danger-zone">
      <h2 id="delete">Delete</h2>
      <button type="button" class="danger" onClick={() => dialog.current?.showModal()}>Delete this manifest…</button>
      <dialog ref={dialog} aria-labelledby="confirm-title">
        <h2 id="confirm-title">Delete {d.name}@{d.digest.slice(0, 19)}…?</h2>
        <ul>
          <li>{tags.length === 0 ? 'No tag names it.' : `${tags.length === 1 ? 'The tag' : 'The tags'} ${tags.join(', ')} ${tags.length === 1 ? 'goes' : 'go'} with it.`}{d.tags.scanned < d.tags.total ? ` (Only the first ${d.tags.scanned} of ${d.tags.total} tags were looked at.)` : ''}</li>
          {d.children && <li>The index goes; its {d.children.length} platform manifests stay, reachable by digest.</li>}
          <li>{d.referrers.length === 0 ? 'Nothing refers to it.' : `${d.referrers.length} referrer${d.referrers.length === 1 ? '' : 's'} (signatures, SBOMs, attestations) stay but point at nothing.`}</li>
          <li>Layers shared with other images stay; space is freed by garbage collection.</li>
        </ul>
        {error && <Problem error={error} />}
        <form method="dialog" class="buttons">
          <button type="submit" autoFocus>Cancel</button>
          <button type="button" class="danger" disabled={busy} onClick={confirm}>Delete</button>
        </form>
      </dialog>
    </section>
  );
}
