/**
 * What the manifest page offers to copy, and who it says is signed in (issue 32): commands that
 * work against the registry they are shown for (plain HTTP: each client's insecure switch, and a
 * note for docker, which has none; http.host on https: none), `oras`/`cosign` commands for an
 * artifact instead of `docker pull`, an artifact's created time, and the htpasswd user.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';
import type { ManifestDetail } from '../../src/ui/wire.js';

const SIGNATURE = 'application/vnd.dev.cosign.artifact.sig.v1+json';
const CREATED = '2025-03-04T05:06:07Z';

describe('web interface: commands, artifacts, the signed-in user', needBrowser(), () => {
  let browser: Browser;
  let registry: TestRegistry;
  let image: Image;
  let signature: Image;
  let host: string;

  before(async () => {
    browser = await launchBrowser();
    registry = await startBerth();
    host = new URL(registry.url).host;
    image = await pushImageOK(registry.url, 'team/app', buildImage('oci-manifest', { layers: 1 }), 'v1');
    signature = await pushImageOK(registry.url, 'team/app', buildImage('oci-artifact', { subject: image, artifactType: SIGNATURE, annotations: { 'org.opencontainers.image.created': CREATED } }));
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
  });

  const commandsOf = async (url: string) => {
    const { page, problems } = await openPage(browser);
    await page.goto(url);
    await page.locator('.copyable code').first().waitFor();
    return { page, problems, commands: await page.locator('.copyable code').allInnerTexts() };
  };

  it('on plain HTTP the commands carry each client`s switch, and docker gets a note', async () => {
    const { page, problems, commands } = await commandsOf(`${registry.url}/ui/repositories/team/app/manifests/v1`);
    for (const command of [
      `docker pull ${host}/team/app:v1`,
      `podman pull --tls-verify=false ${host}/team/app:v1`,
      `skopeo copy --src-tls-verify=false docker://${host}/team/app@${image.digest} oci:app`,
      `crane pull --insecure ${host}/team/app@${image.digest} app.tar`,
    ]) assert.ok(commands.includes(command), `${command} in\n${commands.join('\n')}`);
    assert.match(await page.locator('#plain-http').innerText(), /plain HTTP[\s\S]*insecure-registries/);
    assert.deepEqual(problems, []);
  });

  it('with http.host on https the commands carry no switch', async () => {
    // a second berth on the same root (pushing through it would follow Locations to registry.example.com)
    const https = await startBerth({ http: { host: 'https://registry.example.com' } }, { root: registry.root });
    try {
      const { page, problems, commands } = await commandsOf(`${https.url}/ui/repositories/team/app/manifests/v1`);
      assert.ok(commands.includes('podman pull registry.example.com/team/app:v1'), commands.join('\n'));
      assert.ok(commands.includes('skopeo copy docker://registry.example.com/team/app:v1 oci:app'), commands.join('\n'));
      assert.ok(commands.every((c) => !/tls-verify|insecure/.test(c)), commands.join('\n'));
      assert.equal(await page.locator('#plain-http').count(), 0);
      assert.deepEqual(problems, []);
    } finally {
      await https.stop();
    }
  });

  it('an artifact offers oras and cosign commands, not docker pull, and shows when it was created', async () => {
    const { page, problems, commands } = await commandsOf(`${registry.url}/ui/repositories/team/app/manifests/${signature.digest}`);
    const ref = `${host}/team/app@${signature.digest}`;
    const subject = `${host}/team/app@${image.digest}`;
    for (const command of [
      `oras pull --plain-http ${ref}`,
      `oras manifest fetch --plain-http ${ref}`,
      `oras discover --plain-http ${subject}`,
      `cosign tree --allow-http-registry ${subject}`,
      `cosign verify --allow-http-registry --key cosign.pub ${subject}`,
    ]) assert.ok(commands.includes(command), `${command} in\n${commands.join('\n')}`);
    assert.ok(commands.every((c) => !/^(docker|podman|skopeo|crane) /.test(c)), commands.join('\n'));
    assert.match(await page.locator('dl.facts').first().innerText(), /Created\s+2025-03-04 05:06/);
    assert.deepEqual(problems, []);
  });

  it('the API gives an artifact`s created time from its annotation', async () => {
    const detail = (await (await fetch(`${registry.url}/ui/api/repositories/team/app/manifests/${signature.digest}`)).json()) as ManifestDetail;
    assert.equal(detail.summary.created, CREATED);
  });

  it('with htpasswd the page says who is signed in; /ui/api/session never challenges', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-ui-session-'));
    try {
      await writeHtpasswd(join(dir, 'htpasswd'), { ops: 'ops-pw' });
      const guarded = await startBerth({ auth: { htpasswd: { realm: 'r', path: join(dir, 'htpasswd') } } }, { driver: 'inmemory' });
      try {
        const anonymous = await fetch(`${guarded.url}/ui/api/session`);
        assert.equal(anonymous.status, 200);
        assert.equal(anonymous.headers.get('www-authenticate'), null);
        assert.deepEqual(await anonymous.json(), {});
        const { page, problems } = await openPage(browser, { httpCredentials: { username: 'ops', password: 'ops-pw' } });
        await page.goto(`${guarded.url}/ui/`);
        await page.locator('#signed-in').waitFor();
        assert.equal(await page.locator('#signed-in').innerText(), 'Signed in as ops');
        assert.deepEqual(problems, []);
      } finally {
        await guarded.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
