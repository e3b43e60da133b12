// oidc-provider adapter on the SQL database (PostgreSQL or PGlite), used when REDIS_URL is unset.
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { alreadyConsumed } from './artifact-errors.ts';
import type { Db } from './db.ts';
import { artifactKey, CONSUMABLE, fromStored, toStored } from './artifact-key.ts';

const TABLE = 'oidc_models';

interface Row {
  payload: AdapterPayload;
  consumed_at: Date | null;
}

export class SqlAdapter implements Adapter {
  constructor(
    private readonly db: Db,
    private readonly model: string,
  ) {}

  private rows() {
    return this.db(TABLE).where('model', this.model);
  }

  private live() {
    return this.rows().where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', this.db.fn.now()));
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    await this.db(TABLE)
      .insert({
        model: this.model,
        id: artifactKey(id),
        payload: JSON.stringify(toStored(this.model, payload)),
        grant_id: payload.grantId ?? null,
        client_id: payload.clientId ?? null,
        uid: payload.uid ?? null,
        expires_at: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      })
      .onConflict(['model', 'id'])
      .merge(['payload', 'grant_id', 'client_id', 'uid', 'expires_at']);
  }

  private toPayload(id: string, row: Row | undefined): AdapterPayload | undefined {
    if (!row) return undefined;
    const payload = fromStored(this.model, id, row.payload);
    if (row.consumed_at) payload.consumed = Math.floor(row.consumed_at.getTime() / 1000);
    return payload;
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const row = await this.live().where('id', artifactKey(id)).first<Row | undefined>('payload', 'consumed_at');
    return this.toPayload(id, row);
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const row = await this.live().where('uid', uid).first<Row | undefined>('payload', 'consumed_at');
    return row ? this.toPayload(row.payload.jti as string, row) : undefined;
  }

  /** The device flow is off; the Adapter interface still names this method. */
  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  // Conditional, so two concurrent redemptions of one code, refresh token or request_uri cannot both pass:
  // oidc-provider checks `consumed` and calls consume() in separate steps.
  async consume(id: string): Promise<void> {
    const updated = await this.live()
      .where('id', artifactKey(id))
      .whereNull('consumed_at')
      .update({ consumed_at: this.db.fn.now() });
    if (updated === 0 && CONSUMABLE.has(this.model)) {
      throw alreadyConsumed(this.model);
    }
  }

  async destroy(id: string): Promise<void> {
    await this.rows().where('id', artifactKey(id)).delete();
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.rows().where('grant_id', grantId).delete();
  }
}

/** Deletes expired artifacts; run periodically by the server. */
export async function purgeExpiredArtifacts(db: Db): Promise<number> {
  return db(TABLE).where('expires_at', '<', db.fn.now()).delete();
}
