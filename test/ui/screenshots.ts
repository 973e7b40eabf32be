/**
 * Makes the screenshots in docs/ui/ (shown in the README): berth in memory with a few images,
 * Debian's chromium at a desktop's and a phone's size. `npm run ui:screenshots`.
 */
import { fileURLToPath } from 'node:url';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { launchBrowser, openPage } from '../helpers/ui.js';

const OUT = fileURLToPath(new URL('../../docs/ui/', import.meta.url));
const KiB = 1024;

const browser = await launchBrowser(); // first: it builds the assets the registry loads at start
const registry = await startBerth({}, { driver: 'inmemory' });
try {
  const web = await pushImageOK(registry.url, 'shop/web', buildImage('oci-index', { layers: 3, layerSize: 96 * KiB }), '2.4.1');
  await pushImageOK(registry.url, 'shop/web', buildImage('oci-index', { layers: 3, layerSize: 90 * KiB }), '2.4.0');
  await pushImageOK(registry.url, 'shop/web', buildImage('docker-v2', { layers: 2, layerSize: 80 * KiB }), 'legacy');
  await pushImageOK(registry.url, 'shop/web', buildImage('oci-artifact', { subject: web, artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json' }));
  await pushImageOK(registry.url, 'shop/web', buildImage('oci-artifact', { subject: web, artifactType: 'application/spdx+json' }));
  const api = await pushImageOK(registry.url, 'shop/api', buildImage('oci-manifest', { layers: 4, layerSize: 120 * KiB }), 'v7');
  await pushImageOK(registry.url, 'shop/api', buildImage('oci-artifact', { subject: api, artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json' }));
  for (const name of ['library/alpine', 'library/debian', 'library/nginx', 'library/postgres', 'tools/ci-runner', 'tools/skopeo']) {
    await pushImageOK(registry.url, name, buildImage('oci-manifest', { layers: 1, layerSize: 32 * KiB }), 'latest');
  }
  const shots: [string, string, string, { colorScheme?: 'light' | 'dark'; width?: number; height?: number }][] = [
    ['repositories', '/ui/', 'table.list', {}],
    ['tags', '/ui/repositories/shop/web', 'table.list tbody tr', {}],
    ['index', '/ui/repositories/shop/web/manifests/2.4.1', '#platforms', { height: 1300 }],
    ['image', '/ui/repositories/shop/api/manifests/v7', '#layers', { height: 1500 }],
    ['registry', '/ui/registry', '#about', { height: 700 }],
    ['dark-phone', '/ui/repositories/shop/web', 'table.list tbody tr', { colorScheme: 'dark', width: 390, height: 780 }],
  ];
  for (const [file, path, ready, { colorScheme = 'light', width = 1100, height = 720 }] of shots) {
    const { page } = await openPage(browser, { colorScheme, viewport: { width, height } });
    await page.goto(`${registry.url}${path}`);
    await page.locator(ready).first().waitFor();
    await page.screenshot({ path: `${OUT}${file}.png` });
    await page.context().close();
    process.stdout.write(`docs/ui/${file}.png\n`);
  }
} finally {
  await browser.close();
  await registry.stop();
}
