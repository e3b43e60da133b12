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
import { createHash, createHmac } from 'node:crypto';
import { createChallenge, randomInt, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { verify } from 'altcha-lib/frameworks/shared';
import type { RedisClient } from '../storage/redis.ts';
import type { RateLimitConfig } from '../config.ts';
import { consume, limiterFactory } from '../oauth/rate-limits.ts';

export type { Challenge };

const ACCOUNT_WINDOW_SECONDS = 24 * 3600;
const IP_WINDOW_SECONDS = 3600;
/** A challenge is good for this long after it was shown, and once. */
const CHALLENGE_SECONDS = 10 * 60;
const ALGORITHM = 'PBKDF2/SHA-256';
/** PBKDF2 iterations per counter value the solver tries: the work is about this × the counter. */
const ITERATIONS = 1000;

export interface SignInLimits {
  /**
   * The work (counter floor) a sign-in must prove, 0 for none. `email` undefined: what the address
   * alone asks (the empty form). `knownDevice`: this browser's id when it is known for the account.
   */
  workFor(email: string | undefined, ip: string, knownDevice?: string): Promise<number>;
  /** A signed, expiring challenge whose solution proves at least `work`. */
  challenge(work: number): Promise<Challenge>;
  /** True for a valid solution of our challenge worth at least `work`, the first time it is shown. */
  solved(payload: string, work: number): Promise<boolean>;
  failed(email: string, ip: string, knownDevice?: string): Promise<void>;
  succeeded(email: string, knownDevice?: string): Promise<void>;
}

const NO_LIMITS: SignInLimits = {
  workFor: async () => 0,
  challenge: () => Promise.reject(new Error('sign-in limits are off')),
  solved: async () => false,
  failed: async () => {},
  succeeded: async () => {},
};

/** The work asked `over` failures past a threshold: the base, doubling, up to the ceiling. */
const workOf = (over: number, config: RateLimitConfig) => (over > 0 ? Math.min(config.signInChallengeWork * 2 ** Math.min(over - 1, 30), config.signInChallengeMaxWork) : 0);

export function createSignInLimits(config: RateLimitConfig, { redis, prefix = 'oauth:', secret }: { redis?: RedisClient | undefined; prefix?: string | undefined; secret: string }): SignInLimits {
  if (!config.enabled) return NO_LIMITS;
  const limiter = limiterFactory(redis, prefix);
  const unlimited = Number.MAX_SAFE_INTEGER;
  const perAccount = limiter({ keyPrefix: 'signin-account', points: unlimited, duration: ACCOUNT_WINDOW_SECONDS });
  const perDevice = limiter({ keyPrefix: 'signin-device', points: unlimited, duration: ACCOUNT_WINDOW_SECONDS });
  const perIp = limiter({ keyPrefix: 'signin-ip', points: unlimited, duration: IP_WINDOW_SECONDS });
  const usedChallenges = limiter({ keyPrefix: 'signin-challenge-used', points: 1, duration: CHALLENGE_SECONDS + 60 });
  // Our own keys for the challenges, derived from the first cookie key: nothing else signs with them.
  const hmacSignatureSecret = createHmac('sha256', secret).update('sign-in challenge').digest('hex');
  const hmacKeySignatureSecret = createHmac('sha256', secret).update('sign-in challenge key').digest('hex');

  // Keys of a fixed size, whatever a form sends: a long made-up email or nonce sizes no counter.
  const digest = (value: string) => createHash('sha256').update(value).digest('base64url');
  const account = (email: string) => digest(email.trim().toLowerCase());
  const count = async (l: typeof perIp, key: string) => (await l.get(key))?.consumedPoints ?? 0;

  return {
    async workFor(email, ip, knownDevice) {
      if (email !== undefined && knownDevice) {
        // A known device answers only for its own failures on this account.
        return workOf((await count(perDevice, `${account(email)}|${knownDevice}`)) - config.signInFreeFailures + 1, config);
      }
      const [fromIp, ofAccount] = await Promise.all([count(perIp, ip), email ? count(perAccount, account(email)) : 0]);
      return workOf(Math.max(fromIp - config.signInFailuresPerHourPerIp + 1, ofAccount - config.signInFreeFailures + 1), config);
    },

    challenge(work) {
      return createChallenge({
        algorithm: ALGORITHM,
        cost: ITERATIONS,
        // The solver counts up from 0 to this secret number: between the work and twice it.
        counter: randomInt(work, 2 * work),
        deriveKey,
        hmacSignatureSecret,
        hmacKeySignatureSecret,
        expiresAt: Math.floor(Date.now() / 1000) + CHALLENGE_SECONDS,
        data: { work }, // signed; says what was asked (pages and tests can show it)
      });
    },

    async solved(payload, work) {
      if (typeof payload !== 'string' || payload.length > 8192) return false;
      // Single use: a solution's nonce is recorded once it verified; a second showing fails.
      const store = { get: () => false, set: () => {}, setIfAbsent: async (id: string) => (await consume(usedChallenges, digest(id))).consumedPoints === 1 };
      const result = await verify(payload, deriveKey, hmacSignatureSecret, hmacKeySignatureSecret, store).catch(() => undefined);
      if (!result || result.error || !result.payload || !('solution' in result.payload)) return false;
      // Worth the work asked now (signed in the challenge): a cheaper earlier challenge is not enough.
      return Number(result.payload.challenge.parameters.data?.work) >= work;
    },

    async failed(email, ip, knownDevice) {
      await Promise.all([
        consume(perIp, ip),
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
