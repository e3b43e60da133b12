// Password hashing with scrypt from node:crypto (no native build step).
// Format: scrypt$N$r$p$salt$hash: each hash carries its parameters, so the cost can be raised
// without breaking old hashes; a hash below the current cost is replaced at its next successful
// sign-in (needsRehash, src/accounts/store.ts).
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import pLimit from 'p-limit';
import { intDefault, POLICY } from '../settings.ts';

/** OWASP's current scrypt guidance: N=2^17, r=8, p=1 (128 MiB of memory per hash); PASSWORD_HASH_LOG_N's default. */
export const DEFAULT_LOG_N = intDefault('PASSWORD_HASH_LOG_N');
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

// A password check is the most expensive request we serve (128 MiB by its parameters, and the most
// CPU time of any request, on libuv's thread pool). Hashes run a few at a time; past a short queue a check is refused at
// once (PasswordHashingBusy) instead of queueing unbounded work and memory behind a flood.
//
// The waiting line is shared out so that strangers cannot take the places that users with the
// right password need (docs/security.md). Whoever asks says which lane the check is in:
// - 'unproven' (a browser not known for the account, no proof of work): only while fewer than
//   `concurrency` checks wait — the low mark. Above it the sign-in asks for proof of work first
//   (strain(), src/web/sign-in.ts), so a flood of them turns into challenges, not hashes;
// - 'proven' (a solved challenge): all but the last quarter of the places;
// - 'known' (a browser known for the account): every place, but at most HOLDER_SHARE checks of
//   one holder (account) at once, so one account's owner cannot fill the line either.
// Callers other than the sign-in form (operator scripts, the demo) are 'known' with no holder.
const DEFAULT_CONCURRENCY = POLICY.PASSWORD_HASH_CONCURRENCY.value;
const DEFAULT_MAX_QUEUED = POLICY.PASSWORD_HASH_MAX_QUEUED.value;
/** Checks of one holder at once in the 'known' lane. */
const HOLDER_SHARE = 2;

export class PasswordHashingBusy extends Error {
  override name = 'PasswordHashingBusy';
}

export type HashingLane = 'unproven' | 'proven' | 'known';

/** Which lane a check is in, and whose it is (a digest of the account, for the 'known' lane's share). */
export interface Admission {
  lane: HashingLane;
  holder?: string | undefined;
}

const TRUSTED: Admission = { lane: 'known' };

export interface PasswordHashingOptions {
  /** log2 of scrypt's N for new hashes (config PASSWORD_HASH_LOG_N; below 17 only in tests). */
  logN?: number;
  /** Hashes computed at once. */
  concurrency?: number;
  /** Checks waiting for a turn before further ones are refused. */
  maxQueued?: number;
}

/** Password hashing at one cost, with its own bounded queue: built once (system.ts, the operator scripts' context). */
export interface PasswordHashing {
  hash(password: string, admission?: Admission): Promise<string>;
  verify(password: string, stored: string, admission?: Admission): Promise<boolean>;
  /** True when the stored hash is not of the current cost: hash the password again after it verified. */
  needsRehash(stored: string): boolean;
  /**
   * A hash at the current cost, to verify against when the account does not exist: the timing is
   * the same, so sign-in does not reveal which emails have accounts.
   */
  dummyHash(): Promise<string>;
  /** Hashes being computed and waiting, now. */
  load(): { active: number; queued: number };
  /**
   * 0 while an 'unproven' check would be let in; above the low mark, how full the places of
   * 'proven' checks are, from just above 0 to 1 (full). The sign-in's proof of work grows with it.
   */
  strain(): number;
  /** Changes how many hashes run at once and wait (tests of a flood; tuning). */
  setCapacity(options: Pick<PasswordHashingOptions, 'concurrency' | 'maxQueued'>): void;
}

/** The parameters of a stored hash, or undefined when it is not one we can check. */
function parse(stored: string) {
  const [algo, n, r, p, salt, hash] = stored.split('$');
  const N = Number(n);
  const params = { N, r: Number(r), p: Number(p) };
  // Bounds keep a damaged row from asking for gigabytes.
  const sane = Number.isInteger(Math.log2(N)) && N >= 2 && N <= 2 ** 20 && Number.isInteger(params.r) && params.r >= 1 && params.r <= 32 && Number.isInteger(params.p) && params.p >= 1 && params.p <= 16;
  return algo === 'scrypt' && salt && hash && sane ? { params, salt, hash } : undefined;
}

export function passwordHashing({ logN = DEFAULT_LOG_N, concurrency = DEFAULT_CONCURRENCY, maxQueued = DEFAULT_MAX_QUEUED }: PasswordHashingOptions = {}): PasswordHashing {
  let limit = pLimit(concurrency);
  let places = placesFor(concurrency, maxQueued);
  const held = new Map<string, number>();
  let dummy: Promise<string> | undefined;

  function scrypt(password: string, salt: Buffer, keylen: number, { N, r, p }: { N: number; r: number; p: number }, { lane, holder }: Admission): Promise<Buffer> {
    const holding = lane === 'known' && holder !== undefined ? (held.get(holder) ?? 0) : 0;
    if (limit.pendingCount >= places[lane] || holding >= HOLDER_SHARE) return Promise.reject(new PasswordHashingBusy('too many password checks at once'));
    // Node's default maxmem (32 MiB) is below 128·N·r for N=2^17: allow what the parameters need.
    const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
    if (lane === 'known' && holder !== undefined) held.set(holder, holding + 1);
    const release = () => {
      if (lane !== 'known' || holder === undefined) return;
      const left = (held.get(holder) ?? 1) - 1;
      if (left > 0) held.set(holder, left);
      else held.delete(holder);
    };
    return limit(
      () =>
        new Promise<Buffer>((resolve, reject) => {
          scryptCb(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key)));
        }),
    ).finally(release);
  }

  async function hash(password: string, admission = TRUSTED): Promise<string> {
    const salt = randomBytes(16);
    const N = 2 ** logN;
    const key = await scrypt(password, salt, KEY_LENGTH, { N, r: R, p: P }, admission);
    return ['scrypt', N, R, P, salt.toString('base64url'), key.toString('base64url')].join('$');
  }

  return {
    hash,
    async verify(password, stored, admission = TRUSTED) {
      const parsed = parse(stored);
      if (!parsed) return false;
      const expected = Buffer.from(parsed.hash, 'base64url');
      const actual = await scrypt(password, Buffer.from(parsed.salt, 'base64url'), expected.length, parsed.params, admission);
      return timingSafeEqual(actual, expected);
    },
    needsRehash(stored) {
      const parsed = parse(stored);
      return !parsed || parsed.params.N !== 2 ** logN || parsed.params.r !== R || parsed.params.p !== P;
    },
    dummyHash() {
      dummy ??= hash(randomBytes(16).toString('hex')).catch((err: unknown) => {
        dummy = undefined; // refused while busy: made on a later check
        throw err;
      });
      return dummy;
    },
    load: () => ({ active: limit.activeCount, queued: limit.pendingCount }),
    strain() {
      const waiting = limit.pendingCount;
      if (waiting < places.unproven) return 0;
      return Math.min(1, (waiting - places.unproven + 1) / (places.proven - places.unproven + 1));
    },
    setCapacity(options) {
      if (options.concurrency !== undefined) limit = pLimit(options.concurrency);
      places = placesFor(options.concurrency ?? limit.concurrency, options.maxQueued ?? places.known);
    },
  };
}

/** How many checks may be waiting when a check of each lane is let in (see the top of this file). */
function placesFor(concurrency: number, maxQueued: number): Record<HashingLane, number> {
  const proven = maxQueued - Math.ceil(maxQueued / 4);
  return { unproven: Math.min(concurrency, proven), proven, known: maxQueued };
}
