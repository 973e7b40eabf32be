/**
 * The "signed by <key>" / "not signed" marks in a real browser (issue 33): a tag list and a
 * manifest page of a repository under a signatures policy (`require: false`: marks only), one
 * image signed with the real cosign (test/helpers/cosign.ts), one not.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { generateKeyPair, needCosign, runCosign } from '../helpers/cosign.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { launchBrowser, needBrowser, openPage } from '../helpers/ui.js';

describe('web interface: signature marks', { skip: needBrowser().skip || needCosign().skip }, () => {
  let dir: string;
  let browser: Browser;
  let registry: TestRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-ui-signatures-'));
    const keys = await generateKeyPair(dir);
    await copyFile(keys.pub, join(dir, 'release.pub'));
    browser = await launchBrowser();
    registry = await startBerth({ policies: [{ repositories: ['prod/**'], signatures: { require: false, cosign: { keys: [join(dir, 'release.pub')] } } }] });
    const signed = await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'signed');
    await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'unsigned');
    await runCosign(dir, ['sign', '--key', keys.key, '--tlog-upload=false', '--allow-http-registry', `${new URL(registry.url).host}/prod/app@${signed.digest}`]);
  });
  after(async () => {
    await browser?.close();
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('marks each tag "signed by release" or "not signed", and the manifest page says who signed it', async () => {
    const { page, problems } = await openPage(browser);
    await page.goto(`${registry.url}/ui/repositories/prod/app`);
    const row = (tag: string) => page.locator('table tbody tr', { has: page.getByRole('link', { name: tag, exact: true }) }).locator('td').first();
    await row('signed').waitFor();
    assert.equal(await row('signed').locator('.signed').innerText(), 'signed by release');
    assert.equal(await row('unsigned').locator('.signed').innerText(), 'not signed');
    await page.getByRole('link', { name: 'signed', exact: true }).click();
    await page.locator('dd .signed').waitFor();
    assert.equal(await page.locator('dd .signed').innerText(), 'signed by release');
    assert.deepEqual(problems, []);
  });
});
