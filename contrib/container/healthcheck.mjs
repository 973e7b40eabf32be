// The container's health check: GET /livez where the configuration says berth listens (http.addr,
// REGISTRY_HTTP_ADDR included), over HTTPS when http.tls is set. The effective configuration
// comes from `berth config check` (the file the entrypoint found, or REGISTRY_CONFIGURATION_PATH);
// without one, berth's default address (:5000, plain HTTP). Exit 0 healthy, 1 not.
// Run through the entrypoint (`entrypoint.sh healthcheck`), which finds the configuration.
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

const TIMEOUT_MS = 4000;

function effectiveHTTP() {
  const file = process.env.REGISTRY_CONFIGURATION_PATH;
  if (!file) return { addr: ':5000' };
  const out = execFileSync('berth', ['config', 'check', file], { stdio: ['ignore', 'pipe', 'inherit'], timeout: TIMEOUT_MS });
  return JSON.parse(out.toString()).http;
}

/** where to connect: a wildcard address is reached on loopback */
function target(addr) {
  const colon = addr.lastIndexOf(':');
  const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
  const wildcard = host === '' || host === '0.0.0.0' || host === '::';
  return { host: wildcard ? '127.0.0.1' : host, port: Number(addr.slice(colon + 1)) };
}

try {
  const http = effectiveHTTP();
  const { host, port } = target(http.addr);
  const tls = http.tls !== undefined;
  const request = tls ? httpsRequest : httpRequest;
  // the certificate names the registry's public name, not the loopback address: not checked here
  const req = request({ host, port, path: '/livez', method: 'GET', timeout: TIMEOUT_MS, ...(tls ? { rejectUnauthorized: false } : {}) }, (res) => {
    res.resume();
    process.exit(res.statusCode === 200 ? 0 : 1);
  });
  req.on('timeout', () => req.destroy(new Error('timed out')));
  req.on('error', (err) => {
    console.error(`health check: ${tls ? 'https' : 'http'}://${host}:${port}/livez: ${err.message}`);
    process.exit(1);
  });
  req.end();
} catch (err) {
  console.error(`health check: ${err.message}`);
  process.exit(1);
}
