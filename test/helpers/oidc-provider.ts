/**
 * A real OpenID Provider for the sign-in tests: the `oidc-provider` package (a certified
 * implementation) on 127.0.0.1, with its development login and consent pages (any password), one
 * confidential client, and accounts whose groups the test changes while it runs. Its port is
 * taken before the registry starts (the registry's issuer URL); the provider itself is created
 * once the registry's callback URL is known (`configure`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** the groups the provider gives each user (changed by tests: the next userinfo reads them) */
  groups: Map<string, string[]>;
  /** creates the provider for registries whose callbacks are `redirectUris` */
  configure(...redirectUris: string[]): void;
  /** authorization codes the token endpoint was asked for, in order (a replay shows twice) */
  codeRequests: number;
  stop(): Promise<void>;
}

export async function startProvider(): Promise<TestProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server: Server = createServer((req, res) => {
    if (!handler) return void res.writeHead(503).end('not configured');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const groups = new Map<string, string[]>();
  const provider: TestProvider = {
    issuer,
    clientId: 'berth-test',
    clientSecret: 'berth-test-client-secret',
    groups,
    codeRequests: 0,
    configure(...redirectUris) {
      const oidc = new Provider(issuer, {
        clients: [
          {
            client_id: provider.clientId,
            client_secret: provider.clientSecret,
            redirect_uris: redirectUris,
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
          },
        ],
        async findAccount(_ctx, id) {
          return { accountId: id, claims: async () => ({ sub: id, preferred_username: id, groups: groups.get(id) ?? [] }) };
        },
        claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
        scopes: ['openid', 'profile', 'groups', 'offline_access'],
        features: { devInteractions: { enabled: true } },
        // a refresh token for every code (Keycloak's default; oidc-provider's wants offline_access)
        issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
        cookies: { keys: ['berth-test-provider-cookie-key'] },
      });
      // the provider warns of its development keys and interactions: a test provider has both
      oidc.on('server_error', (_ctx, err) => console.error('oidc-provider:', err));
      const callback = oidc.callback();
      handler = (req, res) => {
        if (req.url?.startsWith('/token')) provider.codeRequests++;
        callback(req, res);
      };
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return provider;
}
