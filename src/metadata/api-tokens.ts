/**
 * The API tokens' records (table `api_tokens`, step 0007): create, list, read one by name, revoke,
 * and the last uses written in one transaction per batch. Only the secret's hash is stored; what a
 * token may do, how its secret is checked and when it is valid are auth's (src/auth/api-tokens.ts).
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface ApiTokenRecord {
  name: string;
  /** base64url SHA-256 of the secret */
  secretHash: string;
  /** repository globs */
  repositories: string[];
  actions: string[];
  /** who created it in the web interface; undefined from the command line */
  owner?: string;
  ownerGroups?: string[];
  /** ISO times */
  created: string;
  expires?: string;
  revoked?: string;
  lastUsed?: string;
}

/** a token of that name exists already (revoked ones included: a name is never reused) */
export class DuplicateTokenName extends Error {
  constructor(readonly tokenName: string) {
    super(`an API token named ${JSON.stringify(tokenName)} exists already (names are never reused, revoked tokens' included): choose another name`);
    this.name = 'DuplicateTokenName';
  }
}

type Row = Database['api_tokens'];

export class ApiTokenRecords {
  constructor(private readonly db: Kysely<Database>) {}

  /** throws DuplicateTokenName when the name is taken */
  async create(token: ApiTokenRecord): Promise<void> {
    const inserted = await this.db
      .insertInto('api_tokens')
      .values({
        name: token.name,
        secret_hash: token.secretHash,
        repositories: JSON.stringify(token.repositories),
        actions: JSON.stringify(token.actions),
        owner: token.owner ?? null,
        owner_groups: token.ownerGroups ? JSON.stringify(token.ownerGroups) : null,
        created_at: token.created,
        expires_at: token.expires ?? null,
        revoked_at: null,
        last_used_at: null,
      })
      .onConflict((oc) => oc.column('name').doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0) !== 1) throw new DuplicateTokenName(token.name);
  }

  async get(name: string): Promise<ApiTokenRecord | undefined> {
    const row = await this.db.selectFrom('api_tokens').selectAll().where('name', '=', name).executeTakeFirst();
    return row && record(row);
  }

  /** every token (`owner` given: that person's only), by name */
  async list(owner?: string): Promise<ApiTokenRecord[]> {
    let query = this.db.selectFrom('api_tokens').selectAll();
    if (owner !== undefined) query = query.where('owner', '=', owner);
    return (await query.orderBy('name').execute()).map(record);
  }

  /** marks it revoked at `at` (`owner` given: only if it is that person's); false when there is no such token or it was revoked already */
  async revoke(name: string, at: string, owner?: string): Promise<boolean> {
    let query = this.db.updateTable('api_tokens').set({ revoked_at: at }).where('name', '=', name).where('revoked_at', 'is', null);
    if (owner !== undefined) query = query.where('owner', '=', owner);
    const updated = await query.executeTakeFirst();
    return Number(updated.numUpdatedRows) === 1;
  }

  /** the latest use of each token named (one transaction); a use never moves last_used_at back */
  async recordUses(uses: Map<string, string>): Promise<void> {
    if (uses.size === 0) return;
    await this.db.transaction().execute(async (tx) => {
      for (const [name, at] of uses) {
        await tx
          .updateTable('api_tokens')
          .set({ last_used_at: at })
          .where('name', '=', name)
          .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
          .execute();
      }
    });
  }
}

function record(row: Row): ApiTokenRecord {
  return {
    name: row.name,
    secretHash: row.secret_hash,
    repositories: JSON.parse(row.repositories) as string[],
    actions: JSON.parse(row.actions) as string[],
    ...(row.owner !== null ? { owner: row.owner } : {}),
    ...(row.owner_groups !== null ? { ownerGroups: JSON.parse(row.owner_groups) as string[] } : {}),
    created: row.created_at,
    ...(row.expires_at !== null ? { expires: row.expires_at } : {}),
    ...(row.revoked_at !== null ? { revoked: row.revoked_at } : {}),
    ...(row.last_used_at !== null ? { lastUsed: row.last_used_at } : {}),
  };
}
