/**
 * The real cosign (test/helpers/cosign.ts) signs images on an upstream and verifies them THROUGH
 * a pull-through cache of it (issue 30, "The mirror serves referrers"): a signature by the tag
 * scheme (`sha256-<hex>.sig`), an OCI 1.1 referrer on an upstream berth (its referrers API), and an
 * OCI 1.1 referrer on Distribution, which has no referrers API (cosign keeps it under the referrers
 * tag schema's `sha256-<hex>` index there). Keys are local, nothing goes to Rekor.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { generateKeyPair, needCosign, runCosign } from '../helpers/cosign.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { needTool } from '../helpers/tools.js';

const hostOf = (url: string) => new URL(url).host;

/** cosign's flags for a plain-http registry on 127.0.0.1, and for signing with OCI 1.1 referrers */
const HTTP = ['--allow-http-registry'];
const OCI11_SIGN = { args: ['--registry-referrers-mode=oci-1-1'], env: { COSIGN_EXPERIMENTAL: '1' } };

describe('cosign verify through the pull-through cache', needCosign(), () => {
  let dir: string;
  let keys: { key: string; pub: string };
  let otherKeys: { key: string; pub: string };
  let upstream: TestRegistry;
  let mirror: TestRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-cosign-'));
    keys = await generateKeyPair(dir);
    const other = join(dir, 'other');
    await mkdir(other);
    otherKeys = await generateKeyPair(other);
    upstream = await startBerth();
    mirror = await startBerth({ proxy: { remoteurl: upstream.url } });
  });

  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** pushes a fresh image to the upstream; `name@digest` */
  async function freshImage(name: string): Promise<string> {
    const image = await pushImageOK(upstream.url, name, buildImage('oci-manifest'), 'v1');
    return `${name}@${image.digest}`;
  }

  async function sign(registry: string, ref: string, mode?: typeof OCI11_SIGN): Promise<void> {
    await runCosign(dir, ['sign', '--key', keys.key, '--tlog-upload=false', ...HTTP, ...(mode?.args ?? []), `${hostOf(registry)}/${ref}`], { env: mode?.env });
  }

  /** cosign verify against `registry`; resolves with the verified payloads' digests */
  async function verify(registry: string, ref: string, options: { oci11?: boolean; pub?: string } = {}): Promise<string[]> {
    const { stdout } = await runCosign(dir, [
      'verify',
      '--key',
      options.pub ?? keys.pub,
      '--insecure-ignore-tlog=true',
      ...HTTP,
      ...(options.oci11 ? ['--experimental-oci11'] : []),
      `${hostOf(registry)}/${ref}`,
    ]);
    const payloads = JSON.parse(stdout) as { critical: { image: { 'docker-manifest-digest': string } } }[];
    return payloads.map((p) => p.critical.image['docker-manifest-digest']);
  }

  it('verifies a signature of the tag scheme (sha256-<hex>.sig), and refuses another key', async () => {
    const ref = await freshImage('lib/tagged');
    await sign(upstream.url, ref);
    assert.deepEqual(await verify(mirror.url, ref), [ref.split('@')[1]]);
    await assert.rejects(verify(mirror.url, ref, { pub: otherKeys.pub }), /no matching signatures|invalid signature/);
  });

  it('verifies an OCI 1.1 referrer signature through the referrers API', async () => {
    const ref = await freshImage('lib/referred');
    await sign(upstream.url, ref, OCI11_SIGN);
    const tags = (await (await fetch(`${upstream.url}/v2/lib/referred/tags/list`)).json()) as { tags: string[] };
    assert.deepEqual(tags.tags, ['v1'], 'no .sig tag: the signature is only a referrer');
    assert.deepEqual(await verify(upstream.url, ref, { oci11: true }), [ref.split('@')[1]], 'the upstream itself verifies');
    assert.deepEqual(await verify(mirror.url, ref, { oci11: true }), [ref.split('@')[1]]);
    // cosign 2.5 says "no signatures found" when none of the referrers verifies with the key
    await assert.rejects(verify(mirror.url, ref, { oci11: true, pub: otherKeys.pub }), /no matching signatures|invalid signature|no signatures found/);
  });

  describe('an upstream without the referrers API (Distribution)', needTool('/usr/bin/docker-registry', 'the upstream registry'), () => {
    let distribution: ReferenceRegistry;
    let distributionMirror: TestRegistry;

    before(async () => {
      distribution = await startReferenceRegistry();
      distributionMirror = await startBerth({ proxy: { remoteurl: distribution.url } });
    });

    after(async () => {
      await distributionMirror?.stop();
      await distribution?.stop();
    });

    it('verifies an OCI 1.1 referrer signature kept under the referrers tag schema', async () => {
      const image = await pushImageOK(distribution.url, 'lib/app', buildImage('oci-manifest'), 'v1');
      const ref = `lib/app@${image.digest}`;
      await sign(distribution.url, ref, OCI11_SIGN);
      const tags = (await (await fetch(`${distribution.url}/v2/lib/app/tags/list`)).json()) as { tags: string[] };
      assert.deepEqual(tags.tags.sort(), [`sha256-${image.digest.slice('sha256:'.length)}`, 'v1'], 'cosign fell back to the tag schema');
      assert.deepEqual(await verify(distributionMirror.url, ref, { oci11: true }), [image.digest]);
    });
  });
});
