/**
 * The web interface renders whatever JSON the registry accepted (issue 26): an image config is any
 * JSON object, so Cmd may be a string, Env an object, Labels an array, history no array, numbers
 * stand where strings belong. Every page (the repository's tag list, the manifest) renders without
 * a page error and shows each value of an unexpected shape as its raw JSON.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, sha256 } from '../helpers/blobs.js';
import { putManifest } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const DOCKER_MANIFEST = 'application/vnd.docker.distribution.manifest.v2+json';
const DOCKER_CONFIG = 'application/vnd.docker.container.image.v1+json';

/** pushes `config` (any JSON) as the config of a one-layer image tagged `tag`; returns the manifest's digest */
async function pushWithConfig(url: string, name: string, tag: string, config: unknown, docker = false): Promise<string> {
  const configData = Buffer.from(JSON.stringify(config));
  const layer = randomBytes(200);
  assert.equal((await pushBlob(url, name, configData)).status, 201);
  assert.equal((await pushBlob(url, name, layer)).status, 201);
  const manifest = {
    schemaVersion: 2,
    mediaType: docker ? DOCKER_MANIFEST : OCI_MANIFEST,
    config: { mediaType: docker ? DOCKER_CONFIG : OCI_CONFIG, digest: sha256(configData), size: configData.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha256(layer), size: layer.length }],
  };
  const body = Buffer.from(JSON.stringify(manifest));
  const res = await putManifest(url, name, tag, body, manifest.mediaType);
  assert.equal(res.status, 201, await res.text());
  return sha256(body);
}

describe('web interface: any JSON the registry accepted', needBrowser(), () => {
  let registry: TestRegistry;
  let browser: Browser;

  before(async () => {
    browser = await launchBrowser();
    registry = await startBerth();
    await pushWithConfig(registry.url, 'odd/app', 'strings', {
      created: 1700000000,
      author: { name: 'someone' },
      os: 7,
      architecture: ['amd64'],
      config: { Cmd: 'echo hi', Entrypoint: 5, Env: { A: '1' }, Labels: ['x', 'y'], WorkingDir: 42, User: null, ExposedPorts: '80/tcp' },
      history: { steps: 3 },
    });
    await pushWithConfig(registry.url, 'odd/app', 'nested', {
      created: 'not a date',
      config: 'weird',
      history: [1, { created: 5, created_by: { run: 'x' } }, { created: '2024-01-02T03:04:05Z', created_by: 'RUN true', empty_layer: 'yes' }],
    }, true);
    await pushWithConfig(registry.url, 'odd/app', 'labels', {
      config: { Labels: { count: 3, nested: { a: 1 }, fine: 'ok' }, Env: ['A=1', 2], Cmd: ['sh', 3] },
    });
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  it('what the API refuses never reaches a page: a null platform, annotations that are no strings, a size that is a string', async () => {
    const child = { mediaType: OCI_MANIFEST, digest: `sha256:${'a'.repeat(64)}`, size: 10 };
    const layer = { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: `sha256:${'b'.repeat(64)}`, size: 1 };
    const config = { mediaType: OCI_CONFIG, digest: `sha256:${'c'.repeat(64)}`, size: 2 };
    for (const doc of [
      { schemaVersion: 2, mediaType: 'application/vnd.oci.image.index.v1+json', manifests: [{ ...child, platform: null }] },
      { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer], annotations: { count: 3 } },
      { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [{ ...layer, size: '1' }] },
    ]) {
      const res = await putManifest(registry.url, 'odd/refused', 'v1', Buffer.from(JSON.stringify(doc)), doc.mediaType);
      assert.equal(res.status, 400, JSON.stringify(doc));
      assert.equal(((await res.json()) as { errors: { code: string }[] }).errors[0].code, 'MANIFEST_INVALID');
    }
  });

  it('the tag list renders every odd image', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/app`);
    const rows = page.locator('table.list tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 3);
    // the platform from an os that is a number and an architecture that is an array: their JSON
    assert.match(await rows.filter({ hasText: 'strings' }).innerText(), /7\/\["amd64"\]/);
    assert.deepEqual(problems, []);
  });

  it('a config with strings, objects and numbers where the specification has others: each shown raw', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/app/manifests/strings`);
    const config = page.locator('section[aria-labelledby="config"]');
    await config.waitFor();
    const text = await config.innerText();
    assert.match(text, /Cmd\s+"echo hi"/);
    assert.match(text, /Entrypoint\s+5/);
    assert.match(text, /Working directory\s+42/);
    assert.match(text, /Ports\s+"80\/tcp"/);
    assert.match(text, /Author\s+\{"name":"someone"\}/);
    assert.match(text, /Environment\s+\{"A":"1"\}/);
    assert.match(text, /Labels\s+\["x","y"\]/);
    assert.match(text, /History\s+\{"steps":3\}/);
    assert.ok((await config.locator('code.raw').count()) >= 8);
    assert.match(await page.locator('dl.facts').first().innerText(), /Created\s+1700000000/);
    assert.deepEqual(problems, []);
  });

  it('a config that is no object inside, history entries of every shape, a docker manifest', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/app/manifests/nested`);
    const config = page.locator('section[aria-labelledby="config"]');
    await config.waitFor();
    assert.match(await config.innerText(), /Config\s+"weird"/);
    await config.getByText('History (3 steps)').click();
    const steps = await config.locator('ol.history li').allInnerTexts();
    assert.equal(steps.length, 3);
    assert.match(steps[0], /^1$/);
    assert.match(steps[1], /5\s+\{"run":"x"\}/);
    assert.match(steps[2], /2024-01-02 03:04\s+RUN true/);
    // the created time that is no date is shown as it is
    assert.match(await page.locator('dl.facts').first().innerText(), /Created\s+not a date/);
    assert.deepEqual(problems, []);
  });

  it('labels with values that are no strings, env and cmd arrays with a number', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/odd/app/manifests/labels`);
    const config = page.locator('section[aria-labelledby="config"]');
    await config.waitFor();
    const text = await config.innerText();
    assert.match(text, /count\s+3/);
    assert.match(text, /nested\s+\{"a":1\}/);
    assert.match(text, /fine\s+ok/);
    assert.match(text, /Cmd\s+\["sh",3\]/);
    assert.match(text, /Environment\s+\["A=1",2\]/);
    assert.deepEqual(problems, []);
  });
});
