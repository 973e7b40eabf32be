import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkLayerURLs, parseManifest } from '../../../src/registry/manifests/index.js';
import { assertRegistryError, dockerWindowsImage, toBody } from './examples.js';

const MCR = 'https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:1234';

async function windowsImageWith(urls: string[]) {
  const doc = dockerWindowsImage();
  (doc.layers[0] as { urls?: string[] }).urls = urls;
  return parseManifest('application/vnd.docker.distribution.manifest.v2+json', toBody(doc));
}

test('with neither allow nor deny, no URL is allowed (Distribution default)', async () => {
  const parsed = await windowsImageWith([MCR]);
  await assertRegistryError(() => checkLayerURLs(parsed, { allow: [], deny: [] }), 'MANIFEST_INVALID', { check: 'urls', url: MCR, digest: parsed.layersWithURLs[0].digest }, 'no layer URLs are allowed');
});

test('a manifest without layer URLs passes any policy', async () => {
  const parsed = await parseManifest('application/vnd.docker.distribution.manifest.v2+json', toBody({ ...dockerWindowsImage(), layers: [] }));
  assert.doesNotThrow(() => checkLayerURLs(parsed, { allow: [], deny: [] }));
});

test('allow patterns: a URL must match one (unanchored)', async () => {
  const parsed = await windowsImageWith([MCR, 'https://go.microsoft.com/fwlink/?linkid=1']);
  assert.doesNotThrow(() => checkLayerURLs(parsed, { allow: [/^https:\/\/mcr\.microsoft\.com\//, /microsoft\.com/], deny: [] }));
  await assertRegistryError(() => checkLayerURLs(parsed, { allow: [/^https:\/\/mcr\.microsoft\.com\//], deny: [] }), 'MANIFEST_INVALID', { url: 'https://go.microsoft.com/fwlink/?linkid=1' }, 'matches no validation.manifests.urls.allow pattern');
});

test('deny patterns: a URL must match none; deny alone allows everything else', async () => {
  const parsed = await windowsImageWith([MCR, 'https://mcr.microsoft.com/nope/x']);
  assert.doesNotThrow(() => checkLayerURLs(parsed, { allow: [], deny: [/internal\.example/] }));
  await assertRegistryError(() => checkLayerURLs(parsed, { allow: [/^https?:\/\/mcr/], deny: [/\/nope\//] }), 'MANIFEST_INVALID', { url: 'https://mcr.microsoft.com/nope/x' }, 'deny pattern');
});

test('a global-flag pattern behaves the same on every call', async () => {
  const parsed = await windowsImageWith([MCR, MCR]);
  const allow = [/mcr/g];
  assert.doesNotThrow(() => checkLayerURLs(parsed, { allow, deny: [] }));
  assert.doesNotThrow(() => checkLayerURLs(parsed, { allow, deny: [] }));
});

test('only http(s) URLs without fragments, whatever the patterns say', async () => {
  const everything = { allow: [/.*/], deny: [] };
  for (const [url, reason] of [
    ['ftp://example.com/layer', 'http or https'],
    ['file:///etc/passwd', 'http or https'],
    ['https://example.com/layer#part', 'fragment'],
    ['not a url', 'is not a URL'],
  ]) {
    const parsed = await windowsImageWith([url]);
    await assertRegistryError(() => checkLayerURLs(parsed, everything), 'MANIFEST_INVALID', { check: 'urls', url }, reason);
  }
});

test('OCI layers with urls are checked too', async () => {
  const doc = {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: 'sha256:' + 'a'.repeat(64), size: 10 },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: 'sha256:' + 'b'.repeat(64), size: 10, urls: ['https://blocked.example.com/l'] }],
  };
  const parsed = await parseManifest(undefined, toBody(doc));
  await assertRegistryError(() => checkLayerURLs(parsed, { allow: [], deny: [/blocked/] }), 'MANIFEST_INVALID', { url: 'https://blocked.example.com/l' });
});
