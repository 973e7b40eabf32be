/**
 * A local stand-in for a CI or Kubernetes token issuer: RSA keys made with jose, its JWKS served
 * on 127.0.0.1 (counting the fetches), and tokens signed with the claims a test asks for.
 */
import { rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';

export interface IssuerKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function makeKey(kid: string): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

export interface TokenOptions {
  key?: IssuerKey;
  /** the kid in the header (default the key's) */
  kid?: string;
  iss?: string;
  aud?: string;
  sub?: string;
  /** seconds since the epoch */
  iat: number;
  /** lifetime in seconds (default 300) */
  lifetime?: number;
  claims?: JWTPayload;
}

export class JwtIssuer {
  /** the keys the JWKS lists (change it to rotate) */
  published: IssuerKey[];
  fetches = 0;

  private constructor(
    readonly iss: string,
    readonly key: IssuerKey,
    private readonly server: Server,
    readonly jwksUrl: string,
  ) {
    this.published = [key];
  }

  /** starts the JWKS server; `iss` undefined: the server's own URL */
  static async start(iss?: string): Promise<JwtIssuer> {
    const key = await makeKey('key-1');
    let issuer: JwtIssuer | undefined;
    const server = createServer((req, res) => {
      if (req.url === '/moved') return void res.writeHead(302, { location: '/jwks' }).end();
      if (req.url !== '/jwks' || !issuer) return void res.writeHead(404).end();
      issuer.fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: issuer.published.map((k) => k.jwk) }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    issuer = new JwtIssuer(iss ?? base, key, server, `${base}/jwks`);
    return issuer;
  }

  jwks(): string {
    return JSON.stringify({ keys: this.published.map((k) => k.jwk) });
  }

  sign(options: TokenOptions): Promise<string> {
    const key = options.key ?? this.key;
    const jwt = new SignJWT({ ...options.claims })
      .setProtectedHeader({ alg: 'RS256', kid: options.kid ?? key.kid, typ: 'JWT' })
      .setIssuer(options.iss ?? this.iss)
      .setAudience(options.aud ?? 'berth')
      .setIssuedAt(options.iat)
      .setNotBefore(options.iat)
      .setExpirationTime(options.iat + (options.lifetime ?? 300));
    if (options.sub !== undefined) jwt.setSubject(options.sub);
    return jwt.sign(key.privateKey);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** the end of a test with a registry, an issuer and a temporary directory: each stopped even when one before fails */
export async function stopFixture(registry: { stop(): Promise<unknown> } | undefined, issuer: JwtIssuer | undefined, dir: string | undefined): Promise<void> {
  try {
    await registry?.stop();
  } finally {
    await issuer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}
