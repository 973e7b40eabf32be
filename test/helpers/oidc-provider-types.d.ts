/** The few parts of `oidc-provider` 8 (it ships no types) that test/helpers/oidc-provider.ts uses. */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown> & {
      findAccount(ctx: unknown, id: string): Promise<Account>;
      issueRefreshToken?(ctx: unknown, client: { grantTypeAllowed(type: string): boolean }): Promise<boolean>;
    });
    on(event: string, listener: (ctx: unknown, err: Error) => void): this;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
