// Abuse limits of the sign-in forms (the pages' /login and the authorization flow's sign-in): past
// a threshold of failures a sign-in must carry a solved proof-of-work challenge (ALTCHA, self-hosted)
// before its password is checked. Never a block: whoever solves the challenge is answered, so the
// right password always signs in, whatever others failed. Counters live in Redis when configured,
// so every instance sees the same ones; otherwise in this process (src/oauth/rate-limits.ts).
//
// - per account, whatever the source (device cookies, addresses): more than `signInFreeFailures`
//   failures in a day and every attempt from a device not known for that account needs the work,
//   doubling with each further failure up to a ceiling. Guessing one password from a thousand
//   fresh browsers costs what it costs from one.
// - per address: more than `signInFailuresPerHourPerIp` failures in an hour (probes of any
//   accounts) and attempts from it need the work, so one address cannot spray many accounts for free.
// - a device known for the account (src/web/known-devices.ts: it signed in to it before) skips both:
//   its owner is never slowed by others' failures; its own failures for the account still count.
// - the load (src/accounts/password.ts strain()): while password checks wait past the low mark, a
//   browser not known for the account proves work before its password is hashed, growing with
//   the load up to the ceiling (src/web/sign-in.ts).
//
// A challenge is bound to the sign-in it was issued for: the account (or none, on the empty form)
// and the address group (src/http/client-address.ts), sealed (AES-256-GCM) inside its signed
// data with the work asked, so the solver learns neither the work nor any floor; the secret
// counter is uniform in [0, 2·work], so the expected cost is the work and nothing can be skipped.
// It is good for CHALLENGE_SECONDS and once. It must be worth the work the failure counts ask
// now; for the load, the work asked when it was issued, if shown within LOAD_HELD_SECONDS: the
// load moves by a check at a time while a person solves, and a solution worth a moment ago's load
// is not asked again (a fresh browser signs in after solving one). An older one, stockpiled
// before an attack, must be worth the load now.
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomInt } from 'node:crypto';
import { createChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { verify } from 'altcha-lib/frameworks/shared';
import type { RedisClient } from '../storage/redis.ts';
import type { RateLimitConfig } from '../config.ts';
import { consume, limiterFactory } from '../limits/limiter.ts';
import { addressGroup } from '../http/client-address.ts';
import { POLICY } from '../settings.ts';

export type { Challenge };

const ACCOUNT_WINDOW_SECONDS = POLICY.SIGNIN_ACCOUNT_WINDOW_SECONDS.value;
const IP_WINDOW_SECONDS = POLICY.SIGNIN_IP_WINDOW_SECONDS.value;
/** A challenge is good for this long after it was shown, and once: too short to stockpile ahead of an attack. */
const CHALLENGE_SECONDS = POLICY.SIGNIN_CHALLENGE_SECONDS.value;
/** A solution shown this soon after its challenge was issued is held to the load of that moment (see the top). */
export const LOAD_HELD_SECONDS = 30;
const ALGORITHM = 'PBKDF2/SHA-256';
/** PBKDF2 iterations per counter value the solver tries: the work is about this × the counter. */
export const CHALLENGE_ITERATIONS = POLICY.CHALLENGE_ITERATIONS.value;

/** What a challenge was issued for, sealed inside it. `account` '' : the empty form (no email yet). */
export interface ChallengeTerms {
  work: number;
  account: string;
  group: string;
  /** When it was issued (ms since the epoch). */
  issuedAt?: number;
}

/** The work a sign-in asks now: of its failure counts, and of the hashing load. */
export interface WorkAsked {
  counted: number;
  load: number;
}

export interface SignInLimits {
  /**
   * The work (expected counter) the failure counts ask of a sign-in, 0 for none. `email`
   * undefined: what the address alone asks (the empty form). `knownDevice`: this browser's id
   * when it is known for the account.
   */
  workFor(email: string | undefined, ip: string, knownDevice?: string): Promise<number>;
  /** The work the hashing load asks of a browser not known for the account (strain from src/accounts/password.ts; 0 for 0). */
  loadWork(strain: number): number;
  /** A signed, expiring challenge whose solution proves `work`, for this sign-in (`email` undefined: the empty form). */
  challenge(work: number, email: string | undefined, ip: string): Promise<Challenge>;
  /**
   * True for a valid solution of our challenge worth the work asked (the load's as it was issued,
   * within LOAD_HELD_SECONDS), issued for this account (or the empty form) and this address group,
   * the first time it is shown.
   */
  solved(payload: string, asked: WorkAsked, email: string, ip: string): Promise<boolean>;
  /** What a challenge of ours was issued for; undefined for anything else (tests, diagnostics). */
  terms(challenge: Challenge): ChallengeTerms | undefined;
  /** Counts a failure (or a check refused for capacity: then without `knownDevice`). */
  failed(email: string, ip: string, knownDevice?: string): Promise<void>;
  succeeded(email: string, knownDevice?: string): Promise<void>;
}

const NO_LIMITS: SignInLimits = {
  workFor: async () => 0,
  loadWork: () => 0,
  challenge: () => Promise.reject(new Error('sign-in limits are off')),
  solved: async () => false,
  terms: () => undefined,
  failed: async () => {},
  succeeded: async () => {},
};

/** The work asked `over` failures past a threshold: the base, doubling, up to the ceiling. */
const workOf = (over: number, config: RateLimitConfig) => (over > 0 ? Math.min(config.signInChallengeWork * 2 ** Math.min(over - 1, 30), config.signInChallengeMaxWork) : 0);

export function createSignInLimits(
  config: RateLimitConfig,
  { redis, prefix = 'oauth:', secret, iterations = CHALLENGE_ITERATIONS }: { redis?: RedisClient | undefined; prefix?: string | undefined; secret: string; iterations?: number | undefined },
): SignInLimits {
  if (!config.enabled) return NO_LIMITS;
  const limiter = limiterFactory(redis, prefix);
  const unlimited = Number.MAX_SAFE_INTEGER;
  const perAccount = limiter({ keyPrefix: 'signin-account', points: unlimited, duration: ACCOUNT_WINDOW_SECONDS });
  const perDevice = limiter({ keyPrefix: 'signin-device', points: unlimited, duration: ACCOUNT_WINDOW_SECONDS });
  const perIp = limiter({ keyPrefix: 'signin-ip', points: unlimited, duration: IP_WINDOW_SECONDS });
  const usedChallenges = limiter({ keyPrefix: 'signin-challenge-used', points: 1, duration: CHALLENGE_SECONDS + 60 });
  // Our own keys for the challenges, derived from the first cookie key: nothing else signs with them.
  const derived = (purpose: string) => createHmac('sha256', secret).update(purpose).digest();
  const hmacSignatureSecret = derived('sign-in challenge').toString('hex');
  const hmacKeySignatureSecret = derived('sign-in challenge key').toString('hex');
  const sealKey = derived('sign-in challenge terms');

  // Keys of a fixed size, whatever a form sends: a long made-up email or nonce sizes no counter.
  const digest = (value: string) => createHash('sha256').update(value).digest('base64url');
  const account = (email: string) => digest(email.trim().toLowerCase());
  const ipKey = (ip: string) => addressGroup(ip);
  const count = async (l: typeof perIp, key: string) => (await l.get(key))?.consumedPoints ?? 0;

  function seal(terms: ChallengeTerms): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', sealKey, iv);
    const sealed = Buffer.concat([cipher.update(JSON.stringify(terms)), cipher.final()]);
    return Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url');
  }
  function unseal(value: unknown): ChallengeTerms | undefined {
    if (typeof value !== 'string' || value.length > 1024) return undefined;
    try {
      const raw = Buffer.from(value, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', sealKey, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(-16));
      const terms = JSON.parse(Buffer.concat([decipher.update(raw.subarray(12, -16)), decipher.final()]).toString()) as ChallengeTerms;
      return Number.isInteger(terms.work) && typeof terms.account === 'string' && typeof terms.group === 'string' ? terms : undefined;
    } catch {
      return undefined;
    }
  }
  /** The payload's challenge terms, read before anything is recorded: a solution for another sign-in is not even taken. */
  function payloadTerms(payload: string): ChallengeTerms | undefined {
    try {
      const parsed = JSON.parse(Buffer.from(payload, 'base64').toString()) as { challenge?: Challenge };
      return unseal(parsed.challenge?.parameters?.data?.terms);
    } catch {
      return undefined;
    }
  }

  return {
    async workFor(email, ip, knownDevice) {
      if (email !== undefined && knownDevice) {
        // A known device answers only for its own failures on this account.
        return workOf((await count(perDevice, `${account(email)}|${knownDevice}`)) - config.signInFreeFailures + 1, config);
      }
      const [fromIp, ofAccount] = await Promise.all([count(perIp, ipKey(ip)), email ? count(perAccount, account(email)) : 0]);
      return workOf(Math.max(fromIp - config.signInFailuresPerHourPerIp + 1, ofAccount - config.signInFreeFailures + 1), config);
    },

    loadWork(strain) {
      if (!(strain > 0)) return 0;
      // From the base just above the low mark to the ceiling when the places of proven checks are full.
      const { signInChallengeWork: base, signInChallengeMaxWork: max } = config;
      return Math.min(max, Math.round(base * Math.max(1, max / base) ** Math.min(strain, 1)));
    },

    challenge(work, email, ip) {
      return createChallenge({
        algorithm: ALGORITHM,
        cost: iterations,
        // The solver counts up from 0 to this secret number: uniform in [0, 2·work], so it expects
        // `work` steps and no part of the range can be skipped.
        counter: randomInt(0, 2 * work + 1),
        deriveKey,
        hmacSignatureSecret,
        hmacKeySignatureSecret,
        expiresAt: Math.floor(Date.now() / 1000) + CHALLENGE_SECONDS,
        // Signed, and sealed: the solver sees neither the work nor whom it is for.
        data: { terms: seal({ work, account: email === undefined ? '' : account(email), group: ipKey(ip), issuedAt: Date.now() }) },
      });
    },

    async solved(payload, { counted, load }, email, ip) {
      if (typeof payload !== 'string' || payload.length > 8192) return false;
      const terms = payloadTerms(payload);
      // For this sign-in: its account (or the empty form shown to this address) and its address group;
      // worth the failures' work now and the load's (as it was issued, if shown soon after).
      if (!terms || terms.group !== ipKey(ip) || (terms.account !== '' && terms.account !== account(email))) return false;
      const heldToIssue = terms.issuedAt !== undefined && Date.now() - terms.issuedAt <= LOAD_HELD_SECONDS * 1000;
      if (terms.work < counted || (terms.work < load && !heldToIssue)) return false;
      // Single use: a solution's nonce is recorded once it verified; a second showing fails.
      const store = { get: () => false, set: () => {}, setIfAbsent: async (id: string) => (await consume(usedChallenges, digest(id))).consumedPoints === 1 };
      const result = await verify(payload, deriveKey, hmacSignatureSecret, hmacKeySignatureSecret, store).catch(() => undefined);
      return Boolean(result && !result.error && result.payload && 'solution' in result.payload);
    },

    terms: (challenge) => unseal(challenge.parameters.data?.terms),

    async failed(email, ip, knownDevice) {
      await Promise.all([
        consume(perIp, ipKey(ip)),
        email ? consume(perAccount, account(email)) : undefined,
        email && knownDevice ? consume(perDevice, `${account(email)}|${knownDevice}`) : undefined,
      ]);
    },

    async succeeded(email, knownDevice) {
      // The account's count stays: only its owner succeeds, and the ceiling must hold after that too.
      if (knownDevice) await perDevice.delete(`${account(email)}|${knownDevice}`);
    },
  };
}
