// Token-signing keys live in the database so that every instance and every restart uses the
// same ones. Created on first use. What they sign (docs/security.md, "Token-signing keys"): in this
// configuration nothing the server issues today — access and refresh tokens and codes are opaque,
// `openid` is refused so no ID token is made, JWT introspection, userinfo and response modes are
// off — but the provider library needs a key set, publishes it at jwks_uri, and would sign ID
// tokens and JWT responses with the newest key should one of them be turned on.
// The row holds the JWK encrypted under DATA_ENCRYPTION_KEYS (`{kid, encrypted}`): a dump of the
// database holds no private key. Rows written before that (the plain JWK) are encrypted on start.
//
// Rotation (`keys rotate`, docs/operations.md): a key is published from its creation
// (created_at), signs from sign_from, and leaves the key set at retire_after, which a rotation
// sets on the keys it replaces: the new key's sign_from plus ID_TOKEN_TTL, once whatever they
// signed has expired. Every instance serves what the rows say at its clock's time — the newest key
// whose sign_from has passed signs, every key not retired is published — and reads the rows again
// on the change feed's notice of a rotation (src/storage/record-cache.ts), so no restart is needed.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { JWK } from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { DataCipher } from '../storage/data-encryption.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import { systemClock, type Clock } from '../clock.ts';
import { ConflictError } from '../errors.ts';
import { POLICY } from '../settings.ts';
import { replaceSigningKeys } from '../seams/oidc-provider.ts';

/** The provider's ID token lifetime (ttl.IdToken), the longest of what the keys would sign. */
export const ID_TOKEN_TTL = POLICY.ID_TOKEN_TTL.value;
export const DEFAULT_ROTATION_DELAY = POLICY.SIGNING_KEY_ROTATION_DELAY.value;
export const MAX_ROTATION_DELAY = POLICY.MAX_SIGNING_KEY_ROTATION_DELAY.value;
const REREAD_MS = POLICY.SIGNING_KEYS_REREAD_SECONDS.value * 1000;

interface StoredKey {
  kid: string;
  encrypted?: string;
}

interface Row {
  kid: string;
  jwk: StoredKey | JWK;
  created_at: Date | string;
  sign_from: Date | string;
  retire_after: Date | string | null;
}

/** A key's times: published from createdAt, signing from signFrom, gone from the key set at retireAfter. */
export interface KeyTimes {
  kid: string;
  createdAt: Date;
  signFrom: Date;
  retireAfter: Date | null;
}

export interface SigningKey extends KeyTimes {
  jwk: JWK;
}

/**
 * - next: published, signs from its sign_from;
 * - signing: the key that signs now;
 * - retiring: replaced, published until its retire_after (what it signed can still be verified);
 * - published: replaced without a retire time (two keys made by two instances' first start, before
 *   rotation existed): published until the next rotation sets one;
 * - retired: out of the key set; removed by the next start or rotation.
 */
export type KeyState = 'next' | 'signing' | 'retiring' | 'published' | 'retired';

function newSigningKey(): JWK {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...(privateKey.export({ format: 'jwk' }) as JWK), kid: randomBytes(8).toString('hex'), alg: 'RS256', use: 'sig' };
}

const sealed = (jwk: JWK, cipher: DataCipher): StoredKey => ({ kid: jwk.kid!, encrypted: cipher.encrypt(JSON.stringify(jwk)) });
const opened = (stored: StoredKey | JWK, cipher: DataCipher): JWK => ('encrypted' in stored && typeof stored.encrypted === 'string' ? JSON.parse(cipher.decrypt(stored.encrypted)) : stored);
const timesOf = (row: Row): KeyTimes => ({
  kid: row.kid,
  createdAt: new Date(row.created_at),
  signFrom: new Date(row.sign_from),
  retireAfter: row.retire_after === null ? null : new Date(row.retire_after),
});
const COLUMNS = ['kid', 'jwk', 'created_at', 'sign_from', 'retire_after'] as const;

const isRetired = (key: KeyTimes, now: number) => key.retireAfter !== null && key.retireAfter.getTime() <= now;
/** Newest first: by sign_from, then creation, then kid, so every instance orders alike. */
const newestFirst = (a: KeyTimes, b: KeyTimes) => b.signFrom.getTime() - a.signFrom.getTime() || b.createdAt.getTime() - a.createdAt.getTime() || (a.kid < b.kid ? 1 : a.kid > b.kid ? -1 : 0);

/** What the keys say at `now`: the key that signs, those published (the signer first), and when that next changes. */
export function keysAt<K extends KeyTimes>(keys: readonly K[], now: number): { signer: K; published: K[]; nextChange: number; state(key: KeyTimes): KeyState } {
  const live = keys.filter((k) => !isRetired(k, now));
  // Never without a key (rows changed by hand): then every key is kept.
  const candidates = [...(live.length ? live : keys)].sort(newestFirst);
  // None signs yet only if the rows were changed by hand: the one due first signs then.
  const signer = candidates.find((k) => k.signFrom.getTime() <= now) ?? candidates[candidates.length - 1]!;
  const times = keys.flatMap((k) => [k.signFrom.getTime(), k.retireAfter?.getTime() ?? Infinity]).filter((t) => t > now);
  return {
    signer,
    published: [signer, ...candidates.filter((k) => k !== signer)],
    nextChange: Math.min(Infinity, ...times),
    state(key) {
      if (key.kid === signer.kid) return 'signing';
      if (isRetired(key, now)) return 'retired';
      if (key.signFrom.getTime() > now) return 'next';
      return key.retireAfter ? 'retiring' : 'published';
    },
  };
}

/** Lets only one writer at a time decide about the keys (a first start, a rotation), on PostgreSQL and PGlite alike. */
const lockKeys = (trx: Db) => trx.raw('lock table signing_keys in share row exclusive mode');

/** Removes retired keys (nothing they signed is still valid), never the last ones. */
async function removeRetired(trx: Db, now: Date): Promise<string[]> {
  const retired = trx('signing_keys').where('retire_after', '<=', now);
  const kept = await trx('signing_keys').where((q) => q.whereNull('retire_after').orWhere('retire_after', '>', now)).first('kid');
  if (!kept) return [];
  return (await retired.del().returning('kid')).map((r: { kid: string }) => r.kid);
}

async function readKeys(db: Db, cipher: DataCipher): Promise<SigningKey[]> {
  const rows: Row[] = await db('signing_keys').select(...COLUMNS);
  return rows.map((row) => ({ ...timesOf(row), jwk: opened(row.jwk, cipher) }));
}

/**
 * The keys at start: the first one made if there is none (signing at once), retired ones
 * removed, any stored in plain text by an earlier version encrypted.
 */
export async function loadSigningKeys(db: Db, cipher: DataCipher, clock: Clock = systemClock): Promise<SigningKey[]> {
  await db.transaction(async (trx) => {
    await lockKeys(trx);
    const now = new Date(clock.now());
    await removeRetired(trx, now);
    if (await trx('signing_keys').first('kid')) return;
    const jwk = newSigningKey();
    await trx('signing_keys').insert({ kid: jwk.kid, jwk: JSON.stringify(sealed(jwk, cipher)), created_at: now, sign_from: now });
  });
  const rows: Array<{ kid: string; jwk: StoredKey | JWK }> = await db('signing_keys').select('kid', 'jwk');
  // Only if still plain, so two instances starting at once write the same thing at most twice.
  for (const row of rows) {
    if (!('encrypted' in row.jwk)) await db('signing_keys').where('kid', row.kid).whereRaw("jwk->>'encrypted' is null").update({ jwk: JSON.stringify(sealed(opened(row.jwk, cipher), cipher)) });
  }
  return readKeys(db, cipher);
}

/** The keys with their times and states, for `keys list`: no key material (nothing is decrypted). */
export async function listSigningKeys(db: Db, clock: Clock = systemClock): Promise<Array<KeyTimes & { state: KeyState }>> {
  const rows: Row[] = await db('signing_keys').select(...COLUMNS);
  const keys = rows.map(timesOf);
  if (keys.length === 0) return [];
  const view = keysAt(keys, clock.now());
  return [...keys].sort(newestFirst).map((k) => ({ ...k, state: view.state(k) }));
}

export interface Rotation {
  kid: string;
  publishedAt: Date;
  signFrom: Date;
  /** The keys it replaces, each with the time it leaves the key set. */
  replaced: Array<{ kid: string; retireAfter: Date }>;
  /** Retired keys removed now. */
  removed: string[];
}

/**
 * `keys rotate`: a new key, published at once and signing `delaySeconds` from now; the keys it
 * replaces retire ID_TOKEN_TTL after it starts signing. Refused while a rotation waits to take
 * effect (a key not yet signing), with nothing changed. Announced on the change feed, so that
 * every running instance publishes the new key at once.
 */
export async function rotateSigningKey(deps: { db: Db; records: RecordCache; cipher: DataCipher; clock?: Clock }, delaySeconds: number): Promise<Rotation> {
  const { db, cipher, clock = systemClock } = deps;
  return db.transaction(async (trx) => {
    await lockKeys(trx);
    const now = clock.now();
    const keys = ((await trx('signing_keys').select(...COLUMNS)) as Row[]).map(timesOf);
    const waiting = keys.filter((k) => k.signFrom.getTime() > now).sort(newestFirst)[0];
    if (waiting) throw new ConflictError(`key ${waiting.kid} is already waiting to sign (from ${waiting.signFrom.toISOString()}): rotate again once it signs; nothing was changed`);
    const removed = await removeRetired(trx, new Date(now));
    const jwk = newSigningKey();
    const signFrom = new Date(now + delaySeconds * 1000);
    const retireAfter = new Date(signFrom.getTime() + ID_TOKEN_TTL * 1000);
    await trx('signing_keys').insert({ kid: jwk.kid, jwk: JSON.stringify(sealed(jwk, cipher)), created_at: new Date(now), sign_from: signFrom });
    const replaced = (await trx('signing_keys').whereNull('retire_after').whereNot('kid', jwk.kid).update({ retire_after: retireAfter }).returning('kid')).map((r: { kid: string }) => ({ kid: r.kid, retireAfter }));
    await deps.records.announce(trx, 'signing_keys', 'all');
    return { kid: jwk.kid!, publishedAt: new Date(now), signFrom, replaced, removed };
  });
}

/** Re-encrypts every token-signing key under the first DATA_ENCRYPTION_KEYS key; returns how many changed. */
export async function reencryptSigningKeys(db: Db, cipher: DataCipher): Promise<number> {
  let changed = 0;
  await db.transaction(async (trx) => {
    const rows: Array<{ kid: string; jwk: StoredKey | JWK }> = await trx('signing_keys').forUpdate().select('kid', 'jwk');
    for (const row of rows) {
      if ('encrypted' in row.jwk && typeof row.jwk.encrypted === 'string' && cipher.isCurrent(row.jwk.encrypted)) continue;
      await trx('signing_keys').where('kid', row.kid).update({ jwk: JSON.stringify(sealed(opened(row.jwk, cipher), cipher)) });
      changed++;
    }
  });
  return changed;
}

/** The keys a running instance signs with and publishes, kept as the rows and the clock say. */
export interface LiveSigningKeys {
  /** The provider's configuration.jwks at its construction: the signing key first, then the others published. */
  readonly jwks: { keys: JWK[] };
  /** From now on `provider` signs with and publishes what is due at each of its requests. */
  serve(provider: Provider): void;
  /** Reads the rows again (on the change feed's notice, and every SIGNING_KEYS_REREAD_SECONDS). */
  reread(): Promise<void>;
  /** The kid that signs now and the kids published, as served. */
  current(): { signing: string; published: string[] };
  stop(): void;
}

interface LiveDeps {
  db: Db;
  cipher: DataCipher;
  records: RecordCache;
  clock: Clock;
  onChange(served: { signing: string; published: string[] }): void;
  onError(err: Error): void;
}

export async function startSigningKeys(deps: LiveDeps): Promise<LiveSigningKeys> {
  const { db, cipher, clock } = deps;
  let keys = await loadSigningKeys(db, cipher, clock);
  let view = keysAt(keys, clock.now());
  let served = view.published.map((k) => k.kid).join(' ');
  let provider: Provider | undefined;
  let reads = 0;

  /** Serves what is due now; the provider's keys change only when what is due did. */
  const apply = () => {
    view = keysAt(keys, clock.now());
    const due = view.published.map((k) => k.kid).join(' ');
    if (due === served) return;
    served = due;
    if (provider) replaceSigningKeys(provider, view.published.map((k) => k.jwk));
    deps.onChange(current());
  };
  const current = () => ({ signing: view.signer.kid, published: view.published.map((k) => k.kid) });
  const reread = async () => {
    // Rereads may overlap (a notice during the periodic one): only the latest started is applied.
    const read = ++reads;
    const rows = await readKeys(db, cipher);
    if (read !== reads) return;
    keys = rows;
    apply();
  };
  const rereadLogged = () => void reread().catch(deps.onError);
  deps.records.onChange((kind) => kind === 'signing_keys' && rereadLogged());
  // Changes may have been missed while the feed was down.
  deps.records.onReset(rereadLogged);
  const timer = setInterval(rereadLogged, REREAD_MS);
  timer.unref();

  return {
    jwks: { keys: view.published.map((k) => k.jwk) },
    serve(p) {
      provider = p;
      // Before each of the provider's requests (the only place anything is signed or the key set
      // served): a key whose time came since is applied then, exactly on the clock.
      p.use(async (_ctx, next) => {
        if (clock.now() >= view.nextChange) apply();
        await next();
      });
    },
    reread,
    current,
    stop: () => clearInterval(timer),
  };
}
