/** Test material for authentication: htpasswd files, Basic headers, keys and certificates (openssl). */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';

const run = promisify(execFile);

/** writes `user:bcrypt` lines (cost 4: fast tests; the cost does not change the code paths) */
export async function writeHtpasswd(path: string, users: Record<string, string>, cost = 4): Promise<void> {
  const lines = Object.entries(users).map(([user, password]) => `${user}:${bcrypt.hashSync(password, cost).replace(/^\$2b\$/, '$2y$')}`);
  await writeFile(path, lines.join('\n') + '\n');
}

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

export interface CertFiles {
  cert: string;
  key: string;
  certPem: string;
  keyPem: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd, timeout: 30_000 });
}

async function files(dir: string, name: string): Promise<CertFiles> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  return { cert, key, certPem: await readFile(cert, 'utf8'), keyPem: await readFile(key, 'utf8') };
}

export type KeyKind = 'ec' | 'rsa' | 'ed25519';

function keyArgs(kind: KeyKind): string[] {
  if (kind === 'ec') return ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'];
  if (kind === 'rsa') return ['-newkey', 'rsa:2048'];
  return ['-newkey', 'ed25519'];
}

/** a self-signed CA certificate */
export async function makeCA(dir: string, name: string, kind: KeyKind = 'ec'): Promise<CertFiles> {
  await openssl(
    ['req', '-x509', ...keyArgs(kind), '-nodes', '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', `/CN=${name}`,
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature'],
    dir,
  );
  return files(dir, name);
}

/** a certificate signed by `ca`: a server certificate for 127.0.0.1/localhost, or a client certificate */
export async function issueCert(dir: string, ca: CertFiles, name: string, options: { kind?: KeyKind; use?: 'server' | 'client' | 'signing' } = {}): Promise<CertFiles> {
  const use = options.use ?? 'server';
  await openssl(['req', ...keyArgs(options.kind ?? 'ec'), '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  const ext =
    use === 'server'
      ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
      : use === 'client'
        ? 'extendedKeyUsage=clientAuth\n'
        : 'keyUsage=critical,digitalSignature\n';
  await writeFile(join(dir, `${name}.ext`), ext);
  await openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`], dir);
  return files(dir, name);
}

/** the base64 DER of a PEM certificate, as x5c holds it */
export function x5cOf(certPem: string): string {
  return certPem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');
}
