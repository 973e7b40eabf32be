/**
 * The web interface in a real browser: Debian's chromium driven by playwright-core (no browser
 * download). The browser code is built once per test process (src/ui/build.ts), as `npm run build`
 * builds it.
 *
 *     describe('...', needBrowser(), () => { ... const browser = await launchBrowser(); ... finally { await browser.close() } })
 */
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { buildUI } from '../../src/ui/build.js';
import { assertTool, needTool } from './tools.js';

export const CHROMIUM = '/usr/bin/chromium';

let built: Promise<unknown> | undefined;

export function needBrowser(): { skip: string | false } {
  return needTool(CHROMIUM, 'the web interface tests in a real browser');
}

/** builds the browser code, once per process; before starting a registry, which reads the assets when it starts */
export async function buildAssets(): Promise<void> {
  await (built ??= buildUI());
}

/** builds the browser code (buildAssets) and starts a headless chromium */
export async function launchBrowser(): Promise<Browser> {
  assertTool(CHROMIUM, 'the web interface tests in a real browser');
  await buildAssets();
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

/**
 * A fresh page (its own cookies, storage and HTTP credentials); every console error and failed
 * request (a CSP refusal shows as both) is collected in `problems`.
 */
export async function openPage(browser: Browser, options: BrowserContextOptions = {}): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, ...options });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`console: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  return { page, problems };
}
