/**
 * The pull-through cache answers the referrers API (OCI 1.1) from its upstream (issue 30, "The
 * mirror serves referrers"): from an upstream berth through a relay that counts requests and
 * plays dead; from Distribution, which has no referrers API, through the referrers tag schema;
 * and from small node:http upstreams of this file that answer too much, garbage, or referrers
 * that do not check out.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { startRelay, type Relay } from '../helpers/relay.js';
import { needTool } from '../helpers/tools.js';
import { drainedOrClosed } from '../helpers/drained.js';

const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const SBOM = 'application/vnd.example.sbom.v1+json';
const SIGNATURE = 'application/vnd.example.signature.v1+json';

interface ReferrersAnswer {
  status: number;
  contentType: string | null;
  filtersApplied: string | null;
  body: { schemaVersion?: number; mediaType?: string; manifests?: { digest: string; artifactType?: string; mediaType: string; size: number; annotations?: Record<string, string> }[] };
}

async function referrers(base: string, name: string, subject: string, artifactType?: string): Promise<ReferrersAnswer> {
  const query = artifactType === undefined ? '' : `?artifactType=${encodeURIComponent(artifactType)}`;
  const res = await fetch(`${base}/v2/${name}/referrers/${subject}${query}`);
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get('content-type'), filtersApplied: res.headers.get('oci-filters-applied'), body: JSON.parse(text) as ReferrersAnswer['body'] };
}

const digestsOf = (answer: ReferrersAnswer): string[] => (answer.body.manifests ?? []).map((m) => m.digest).sort();
const sorted = (answer: ReferrersAnswer) => [...(answer.body.manifests ?? [])].sort((a, b) => (a.digest < b.digest ? -1 : 1));

/** the files under a repository's referrers index in a filesystem root */
function referrersDir(root: string, name: string): string {
  return join(root, 'docker/registry/v2/repositories', name, '_manifests/referrers');
}

function revisionDir(root: string, name: string, digest: string): string {
  return join(root, 'docker/registry/v2/repositories', name, '_manifests/revisions/sha256', digest.slice('sha256:'.length));
}

describe('a mirror of berth answers the referrers API', () => {
  let upstream: TestRegistry;
  let relay: Relay;
  let mirror: TestRegistry;
  let image: Image;
  let sbom: Image;
  let signature: Image;

  before(async () => {
    upstream = await startBerth();
    relay = await startRelay(upstream.url);
    mirror = await startBerth({ proxy: { remoteurl: relay.url } });
    image = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-manifest'), 'v1');
    sbom = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-artifact', { subject: image, artifactType: SBOM, annotations: { 'org.example.kind': 'sbom' } }));
    signature = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-artifact', { subject: image, artifactType: SIGNATURE }));
  });

  after(async () => {
    await mirror?.stop();
    await relay?.close();
    await upstream?.stop();
  });

  it("lists the upstream's referrers, with their descriptors, and filters by artifactType", async () => {
    const fromUpstream = await referrers(upstream.url, 'lib/app', image.digest);
    assert.equal(fromUpstream.body.manifests?.length, 2);
    const got = await referrers(mirror.url, 'lib/app', image.digest);
    assert.equal(got.status, 200);
    assert.equal(got.contentType, OCI_INDEX);
    assert.equal(got.body.schemaVersion, 2);
    assert.equal(got.body.mediaType, OCI_INDEX);
    assert.deepEqual(sorted(got), sorted(fromUpstream));
    assert.equal(got.filtersApplied, null);
    assert.deepEqual(
      sorted(got).find((m) => m.digest === sbom.digest),
      { mediaType: sbom.mediaType, digest: sbom.digest, size: sbom.body.length, artifactType: SBOM, annotations: { 'org.example.kind': 'sbom' } },
    );

    const filtered = await referrers(mirror.url, 'lib/app', image.digest, SIGNATURE);
    assert.equal(filtered.status, 200);
    assert.equal(filtered.filtersApplied, 'artifactType');
    assert.deepEqual(digestsOf(filtered), [signature.digest]);
    assert.deepEqual((await referrers(mirror.url, 'lib/app', image.digest, 'application/vnd.example.none')).body.manifests, []);
  });

  it('caches the answer with the referrer manifests: the same list while the upstream is down, each referrer fetched once', async () => {
    const before = await referrers(mirror.url, 'lib/app', image.digest);
    assert.equal(before.body.manifests?.length, 2);
    const fetchesOf = (digest: string) => relay.count(new RegExp(`^GET /v2/lib/app/manifests/${digest}$`));
    assert.equal(fetchesOf(sbom.digest), 1, 'the referrer manifest is fetched once, not on every referrers request');
    assert.equal(fetchesOf(signature.digest), 1);
    assert.ok(existsSync(revisionDir(mirror.root!, 'lib/app', sbom.digest)), 'the referrer is a revision of the cache');

    relay.setDown(true);
    try {
      const asked = relay.count(/referrers/);
      const cached = await referrers(mirror.url, 'lib/app', image.digest);
      assert.equal(cached.status, 200);
      assert.equal(cached.contentType, OCI_INDEX);
      assert.deepEqual(sorted(cached), sorted(before));
      const filtered = await referrers(mirror.url, 'lib/app', image.digest, SBOM);
      assert.equal(filtered.filtersApplied, 'artifactType');
      assert.deepEqual(digestsOf(filtered), [sbom.digest]);
      assert.equal(relay.count(/referrers/), asked, 'the dead upstream got no request through');
      // what the list names can be pulled from the cache alone
      const res = await fetch(`${mirror.url}/v2/lib/app/manifests/${signature.digest}`, { headers: { accept: signature.mediaType } });
      assert.equal(res.status, 200);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), signature.body);
    } finally {
      relay.setDown(false);
    }
  });

  it('asks the upstream every time, as for a tag: a referrer pushed there later is listed', async () => {
    const attestation = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-artifact', { subject: image, artifactType: 'application/vnd.example.attestation.v1+json' }));
    const got = await referrers(mirror.url, 'lib/app', image.digest);
    assert.deepEqual(digestsOf(got), [sbom.digest, signature.digest, attestation.digest].sort());
  });

  it('under a prefix of proxy.upstreams: the upstream is asked without the prefix, a private repository beside it answers from storage', async () => {
    const prefixed = await startBerth({ proxy: { upstreams: [{ prefix: 'hub', remoteurl: relay.url }] } });
    try {
      const got = await referrers(prefixed.url, 'hub/lib/app', image.digest);
      assert.equal(got.status, 200);
      assert.ok(digestsOf(got).includes(sbom.digest) && digestsOf(got).includes(signature.digest), JSON.stringify(got.body));
      assert.ok(relay.count(new RegExp(`^GET /v2/lib/app/referrers/${image.digest}$`)) > 0);
      const own = await pushImageOK(prefixed.url, 'mine/app', buildImage('oci-manifest'));
      const ownReferrer = await pushImageOK(prefixed.url, 'mine/app', buildImage('oci-artifact', { subject: own, artifactType: SBOM }));
      const asked = relay.requests.length;
      assert.deepEqual(digestsOf(await referrers(prefixed.url, 'mine/app', own.digest)), [ownReferrer.digest]);
      assert.equal(relay.requests.length, asked, 'the private repository is not looked up upstream');
    } finally {
      await prefixed.stop();
    }
  });

  it('answers an empty list for a subject without referrers, and a 503 when the upstream is down and nothing is cached', async () => {
    const lonely = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-manifest'), 'v2');
    const empty = await referrers(mirror.url, 'lib/app', lonely.digest);
    assert.equal(empty.status, 200);
    assert.deepEqual(empty.body.manifests, []);
    relay.setDown(true);
    try {
      const res = await fetch(`${mirror.url}/v2/lib/app/referrers/${lonely.digest}`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { errors: { code: string; message: string }[] };
      assert.equal(body.errors[0].code, 'UNAVAILABLE');
      assert.match(body.errors[0].message, /referrers list .* is not in the cache and the upstream registry 127\.0\.0\.1:\d+ is unavailable/);
    } finally {
      relay.setDown(false);
    }
  });
});

describe('a mirror of Distribution (no referrers API) reads the referrers tag schema', needTool('/usr/bin/docker-registry', 'the upstream registry'), () => {
  let upstream: ReferenceRegistry;
  let relay: Relay;
  let mirror: TestRegistry;

  before(async () => {
    upstream = await startReferenceRegistry();
    relay = await startRelay(upstream.url);
    mirror = await startBerth({ proxy: { remoteurl: relay.url } });
  });

  after(async () => {
    await mirror?.stop();
    await relay?.close();
    await upstream?.stop();
  });

  it('lists the referrers of the sha256-<hex> index, each checked against its manifest', async () => {
    const image = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-manifest'), 'v1');
    const sbom = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-artifact', { subject: image, artifactType: SBOM }));
    // listed in the tag index, but a referrer of another image: the mirror leaves it out
    const stranger = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-artifact', { artifactType: SBOM }));
    assert.equal((await fetch(`${upstream.url}/v2/lib/app/referrers/${image.digest}`)).status, 404, 'Distribution has no referrers API');
    const tagIndex = Buffer.from(
      JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: [sbom.descriptor, { ...stranger.descriptor, artifactType: SBOM }].map((d) => ({ ...d, artifactType: SBOM })) }),
    );
    assert.equal((await putManifest(upstream.url, 'lib/app', `sha256-${image.digest.slice('sha256:'.length)}`, tagIndex, OCI_INDEX)).status, 201);

    const got = await referrers(mirror.url, 'lib/app', image.digest);
    assert.equal(got.status, 200);
    assert.equal(got.contentType, OCI_INDEX);
    // the descriptor is the mirror's own, from the manifest (its annotations too), not the index's
    assert.deepEqual(got.body.manifests, [{ mediaType: sbom.mediaType, digest: sbom.digest, size: sbom.body.length, artifactType: SBOM, annotations: sbom.annotations }]);
    assert.deepEqual(digestsOf(await referrers(mirror.url, 'lib/app', image.digest, SBOM)), [sbom.digest]);
    assert.deepEqual((await referrers(mirror.url, 'lib/app', image.digest, SIGNATURE)).body.manifests, []);
    assert.equal(relay.count(new RegExp(`^GET /v2/lib/app/manifests/sha256-${image.digest.slice('sha256:'.length)}$`)), 3);

    relay.setDown(true);
    try {
      assert.deepEqual(digestsOf(await referrers(mirror.url, 'lib/app', image.digest)), [sbom.digest], 'cached');
    } finally {
      relay.setDown(false);
    }
  });

  it('answers an empty list when there is no tag index', async () => {
    const image = await pushImageOK(upstream.url, 'lib/app', buildImage('oci-manifest'), 'v2');
    const got = await referrers(mirror.url, 'lib/app', image.digest);
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.manifests, []);
    assert.deepEqual((await referrers(mirror.url, 'lib/other', image.digest)).body.manifests, [], 'nor for a repository the upstream does not know');
  });
});

interface Fake {
  url: string;
  requests: string[];
  handle: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
  close(): Promise<void>;
}

async function startFake(): Promise<Fake> {
  const sockets = new Set<Socket>();
  const fake: Fake = {
    url: '',
    requests: [],
    handle: (_req, res) => void res.writeHead(404).end(),
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  const server = createServer((req, res) => {
    fake.requests.push(`${req.method} ${req.url}`);
    void fake.handle(req, res);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

describe('a hostile upstream cannot make the mirror cache referrers', () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  });

  async function setUp(handle: Fake['handle']): Promise<{ fake: Fake; mirror: TestRegistry }> {
    const fake = await startFake();
    fake.handle = handle;
    closers.push(() => fake.close());
    const mirror = await startBerth({ proxy: { remoteurl: fake.url } });
    closers.push(() => mirror.stop());
    return { fake, mirror };
  }

  /** the client's error (502, or 503 for an answer that broke off or does not parse, as for a tag list); nothing cached */
  async function refused(mirror: TestRegistry, subject: string, message: RegExp, status = 502): Promise<void> {
    const res = await fetch(`${mirror.url}/v2/lib/app/referrers/${subject}`);
    assert.equal(res.status, status);
    const body = (await res.json()) as { errors: { code: string; message: string }[] };
    assert.equal(body.errors[0].code, 'UNAVAILABLE');
    assert.match(body.errors[0].message, message);
    assert.ok(!existsSync(referrersDir(mirror.root!, 'lib/app')), 'no referrers index in the cache');
    assert.ok(!existsSync(join(mirror.root!, 'docker/registry/v2/repositories/lib/app/_manifests/revisions')), 'no manifest in the cache');
  }

  it('refuses a referrers answer over the 4 MiB a manifest may have, reading no further', async () => {
    const subject = sha256(randomBytes(16));
    let sent = 0;
    const { mirror } = await setUp(async (req, res) => {
      if (!req.url!.includes('/referrers/')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': OCI_INDEX }); // chunked: no length to refuse up front
      res.write('{"schemaVersion":2,"manifests":[');
      const entry = Buffer.from(`{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"${subject}","size":1},`.repeat(1000));
      while (sent < 64 * 1024 * 1024 && !res.destroyed) {
        sent += entry.length;
        if (!res.write(entry)) await drainedOrClosed(res);
      }
      res.end();
    });
    await refused(mirror, subject, /over the 4194304-byte limit/);
    assert.ok(sent < 32 * 1024 * 1024, `the upstream got ${sent} bytes out`);
  });

  for (const [what, body, message, status] of [
    ['not JSON', '<html>hello</html>', /is unavailable \(its referrers list is not JSON\)/, 503],
    ['not an index', '{"tags":[]}', /not a referrers list \(it is not an image index\)/, 502],
    ['a descriptor without a digest', '{"schemaVersion":2,"manifests":[{"mediaType":"x","digest":"sha256:../../../etc","size":1}]}', /not a referrers list \(it lists a descriptor without a valid digest\)/, 502],
  ] as const) {
    it(`refuses a referrers answer that is ${what}, fetching and caching nothing`, async () => {
      const subject = sha256(randomBytes(16));
      const { fake, mirror } = await setUp((req, res) => {
        if (!req.url!.includes('/referrers/')) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': OCI_INDEX }).end(body);
      });
      await refused(mirror, subject, message, status);
      assert.deepEqual(fake.requests.filter((r) => r.includes('/manifests/')), []);
    });
  }

  it('refuses an answer listing more than 1000 referrers before fetching any', async () => {
    const subject = sha256(randomBytes(16));
    const manifests = Array.from({ length: 1001 }, () => ({ mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: sha256(randomBytes(16)), size: 100 }));
    const { fake, mirror } = await setUp((req, res) => {
      if (!req.url!.includes('/referrers/')) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': OCI_INDEX }).end(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests }));
    });
    await refused(mirror, subject, /lists 1001 referrers, over the cache's limit of 1000/);
    assert.deepEqual(fake.requests.filter((r) => r.includes('/manifests/')), []);
  });

  it('refuses a redirected referrers answer', async () => {
    const subject = sha256(randomBytes(16));
    const { fake, mirror } = await setUp((req, res) => {
      if (!req.url!.includes('/referrers/')) return void res.writeHead(404).end();
      res.writeHead(307, { location: 'http://127.0.0.2:1/v2/' }).end();
    });
    const res = await fetch(`${mirror.url}/v2/lib/app/referrers/${subject}`);
    assert.equal(res.status, 502);
    assert.equal(fake.requests.length, 1);
    assert.ok(!existsSync(referrersDir(mirror.root!, 'lib/app')));
  });

  it('lists only referrers whose manifest hashes to the listed digest and names the subject', async () => {
    const image = buildImage('oci-manifest');
    const real = buildImage('oci-artifact', { subject: image, artifactType: SBOM });
    const stranger = buildImage('oci-artifact', { artifactType: SBOM }); // its subject is another image
    const forged = sha256(randomBytes(16)); // served with the real referrer's bytes
    const served = new Map<string, Buffer>([
      [real.digest, real.body],
      [stranger.digest, stranger.body],
      [forged, real.body],
    ]);
    const { mirror } = await setUp((req, res) => {
      if (req.url === `/v2/lib/app/referrers/${image.digest}`) {
        const listed = [real, stranger].map((i) => ({ ...i.descriptor, artifactType: SBOM })).concat([{ mediaType: real.mediaType, digest: forged, size: real.body.length, artifactType: SBOM }]);
        return void res.writeHead(200, { 'content-type': OCI_INDEX }).end(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: listed }));
      }
      const digest = /\/manifests\/(sha256:[0-9a-f]+)$/.exec(req.url!)?.[1];
      const body = digest && served.get(digest);
      if (!body) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': real.mediaType, 'docker-content-digest': digest }).end(body);
    });
    const got = await referrers(mirror.url, 'lib/app', image.digest);
    assert.equal(got.status, 200);
    assert.deepEqual(digestsOf(got), [real.digest]);
    assert.ok(!existsSync(revisionDir(mirror.root!, 'lib/app', forged)), 'the forged digest is not cached');
  });
});
