// A refresh retried or raced within seconds gets the same answer. When two workers of one app
// refresh the same token at once, or an app retries a refresh whose answer was lost, the second
// presentation of the (now spent) refresh token would count as reuse and revoke the grant: the
// user silently disconnected. Within a short window, the same client presenting the same spent
// token instead receives the very same token response — same access token, same new refresh
// token — as long as that new refresh token has not been used. Outside the window, after the new
// token was used, or from another client: reuse detection as before (the grant is revoked).
//
// Nothing usable at rest: the remembered answer is stored only encrypted (AES-256-GCM) under a
// key derived from the presented refresh token, whose value the server never stores, and it
// expires with the window. The window ends by the system's clock too (the answer carries its
// end): on real time the two agree, and a test that moves the clock ends the window without waiting.
//
// "The same client" is the one the provider authenticated — by its secret, by a client assertion
// it verified (private_key_jwt: registry clients with keys, metadata-document and registered
// clients; src/oauth/client-keys.ts), or as the public
// client the token was issued to: the retry is recognised inside the refresh grant, after client
// authentication and before the token is spent or reuse detected (answersAgain, called from the
// grant's account lookup in provider.ts). Verifying credentials stays the provider's alone.
//
// The window is the client's (clients set-refresh-grace; 0: off), else REFRESH_GRACE_SECONDS for
// clients that authenticate (a secret, private_key_jwt) and at most PUBLIC_CLIENT_GRACE_SECONDS
// for public ones (`none`): a public client proves nothing but the token, so within the window
// whoever holds its spent token gets the successor. A retry must also prove the DPoP key of the
// first presentation, or send no proof when it sent none (dpop.ts).
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomFillSync } from 'node:crypto';
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { SingleFlights } from '../storage/artifacts.ts';
import { dpopKeyOf } from './dpop.ts';
import { isLive } from './token-liveness.ts';
import { NO_STORE } from '../http/envelope.ts';
import type { TokenEndpointLimits } from './rate-limits.ts';
import type { Clock } from '../clock.ts';
import { POLICY } from '../settings.ts';
import { factsOf, type ProviderClient } from '../directory/facts.ts';

type Next = () => Promise<void>;

/** How long a concurrent twin may wait for the first presentation's answer. */
const WAIT_FOR_FIRST_MS = 3000;
const POLL_MS = 25;

/**
 * The default window of a public client, lower than REFRESH_GRACE_SECONDS: it is for two refreshes
 * of one app racing (two threads, a screen and a background task) and a retry after a lost answer,
 * which on a phone come within a second or two; every second more is a second in which a stolen
 * spent token is as good as the app's (there is no secret to prove the client).
 */
export const PUBLIC_CLIENT_GRACE_SECONDS = POLICY.PUBLIC_CLIENT_GRACE_SECONDS.value;

/** What the window depends on: the client's own setting and whether it is public. */
export type GraceClient = Pick<ProviderClient, 'clientAuthMethod' | 'refresh_grace_seconds'>;

/** The client's grace window in seconds (0: off): its own, else the server's default for its kind. */
export function graceSecondsOf(client: GraceClient, serverDefault: number): number {
  if (typeof client.refresh_grace_seconds === 'number') return client.refresh_grace_seconds;
  return client.clientAuthMethod === 'none' ? Math.min(PUBLIC_CLIENT_GRACE_SECONDS, serverDefault) : serverDefault;
}

export interface Remembered {
  clientId: string;
  body: Record<string, unknown>;
  /** The first presentation's DPoP key (dpop.ts): absent or '' when it sent no proof. */
  jkt?: string;
  /** When the window ends (ms, by the system's clock); absent in answers sealed before it was kept. */
  until?: number;
}

const idOf = (token: string) => createHmac('sha256', 'refresh-grace:id').update(token).digest('base64url');
// The key: HMAC-SHA256 keyed by the token (a PRF; the token is a 256-bit random value, so no
// salt or stretching is needed). hkdfSync cost several times more on every refresh.
const keyOf = (token: string) => createHmac('sha256', token).update('refresh-grace:key').digest();
/** The key of answers sealed before a deploy that changed keyOf, tried when keyOf's fails. */
const earlierKeyOf = (token: string) => Buffer.from(hkdfSync('sha256', token, Buffer.alloc(0), 'refresh-grace:key', 32));

// Nonces from a pool filled 4 KiB at a time: one small randomBytes call per refresh cost more
// than the encryption. A nonce is never reused, and each key seals one answer anyway.
const NONCE_BYTES = 12;
const noncePool = Buffer.alloc(4096 - (4096 % NONCE_BYTES));
let nonceOffset = noncePool.length;
function nonce(): Buffer {
  if (nonceOffset === noncePool.length) {
    randomFillSync(noncePool);
    nonceOffset = 0;
  }
  nonceOffset += NONCE_BYTES;
  return Buffer.from(noncePool.subarray(nonceOffset - NONCE_BYTES, nonceOffset));
}

const FAILED = 'failed';

export function seal(token: string, remembered: Remembered): string {
  const iv = nonce();
  const cipher = createCipheriv('aes-256-gcm', keyOf(token), iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(remembered), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64url');
}

export function open(token: string, sealed: string): Remembered | undefined {
  const raw = Buffer.from(sealed, 'base64url');
  for (const key of [keyOf, earlierKeyOf]) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key(token), raw.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + 16));
      return JSON.parse(Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES + 16)), decipher.final()]).toString('utf8')) as Remembered;
    } catch {
      // Not sealed under this key (or tampered with): try the next, then give up.
    }
  }
  return undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const flightOf = (token: string) => `refresh-grace:${idOf(token)}`;

/** The single flight of each presented refresh token within its client's window (see the header). */
export interface RefreshFlights {
  /** True for the first presentation in the window, which goes on to the grant. */
  claim(token: string, seconds: number): Promise<boolean>;
  /** The first presentation's outcome: its answer (a 200 with a new refresh token), or undefined when it failed. */
  settle(token: string, answered: Remembered | undefined, seconds: number): Promise<void>;
  /** The flight of `token` as claimed and settled with this answer at once (its SingleFlights key). */
  settled(token: string, answered: Remembered, seconds: number): { key: string; value: string; seconds: number };
  /** The flight's sealed answer, FAILED, '' while unsettled, or undefined when nobody holds it. */
  read(token: string): Promise<string | undefined>;
}

export function refreshFlights(flights: SingleFlights, clock: Clock): RefreshFlights {
  const sealed = (token: string, answered: Remembered, seconds: number) => seal(token, { ...answered, until: clock.now() + seconds * 1000 });
  return {
    claim: (token, seconds) => flights.claim(flightOf(token), seconds),
    settle: (token, answered, seconds) => flights.settle(flightOf(token), answered ? sealed(token, answered, seconds) : FAILED, seconds),
    settled: (token, answered, seconds) => ({ key: flightOf(token), value: sealed(token, answered, seconds), seconds }),
    read: (token) => flights.read(flightOf(token)),
  };
}

/** The flights and each client's window: what the provider's path and the hot path share. */
export interface RefreshGrace {
  flights: RefreshFlights;
  secondsFor(client: GraceClient): number;
  /** What a remembered answer's end (Remembered.until) is compared with. */
  clock: Clock;
}

export function refreshGraceWindows(flights: SingleFlights, serverDefault: number, clock: Clock): RefreshGrace {
  return { flights: refreshFlights(flights, clock), secondsFor: (client) => graceSecondsOf(client, serverDefault), clock };
}

// A first presentation whose proof could not be read: no retry's key is ever this.
const UNREADABLE_KEY = '!';

/** Thrown by the refresh grant's account lookup to stop the grant of a retry answered again. */
export class AnsweredAgain extends errors.InvalidGrant {
  constructor() {
    super('refresh retried within its grace window: answered with the first answer');
  }
}

/** The window's two parts: in the refresh grant, and around the provider's answer. */
export interface RefreshGraceOnProvider {
  /**
   * Called by the refresh grant once the provider authenticated the client (by its secret, its
   * assertion, or as the public client the token was issued to) and found the presented token to
   * be that client's, before it spends the token or detects reuse (its account lookup,
   * provider.ts). True when the request is a retry or twin to answer with the first answer: the
   * grant must stop (AnsweredAgain), and the middleware answers.
   */
  answersAgain(ctx: KoaContextWithOIDC, presented: string): Promise<boolean>;
  /** Around the provider (provider.use): settles a first presentation, answers a retry. */
  middleware(ctx: KoaContextWithOIDC, next: Next): Promise<void>;
}

export function refreshGrace({ flights: grace, secondsFor, clock }: RefreshGrace, limits: Pick<TokenEndpointLimits, 'authenticated'>): RefreshGraceOnProvider {
  // Per request (its context): the flight it claimed as the first presentation, or the answer it gets again.
  const claimed = new WeakMap<object, { token: string; seconds: number }>();
  const again = new WeakMap<object, Remembered>();

  /**
   * The first presentation's answer, waited for while it is on its way, while its window lasts. A
   * first presentation that failed leaves a mark that ends the wait at once.
   */
  async function rememberedAnswer(token: string): Promise<Remembered | undefined> {
    // The wait is for another request, on real time; the window is the clock's.
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (;;) {
      const stored = await grace.read(token);
      if (stored === undefined || stored === FAILED || Date.now() > deadline) return undefined;
      if (stored === '') {
        await sleep(POLL_MS);
        continue;
      }
      const remembered = open(token, stored);
      return remembered && (remembered.until === undefined || clock.now() < remembered.until) ? remembered : undefined;
    }
  }

  /** The remembered answer if it may be given again to this authenticated client; undefined: reuse detection runs. */
  async function answerFor(ctx: KoaContextWithOIDC, token: string, clientId: string): Promise<Remembered | undefined> {
    const remembered = await rememberedAnswer(token);
    if (remembered?.clientId !== clientId) return undefined;
    // The key the first presentation proved, proved again (none when it sent no proof).
    const key = dpopKeyOf(ctx.get('DPoP'));
    if (key === undefined || key !== (remembered.jkt ?? '')) return undefined;
    // Only while the new refresh token is unused and live (token-liveness.ts): otherwise it is reuse.
    const { provider } = ctx.oidc;
    const next = await provider.RefreshToken.find(String(remembered.body.refresh_token));
    if (!next?.grantId || next.consumed || !isLive(next, await provider.Grant.find(next.grantId, { ignoreExpiration: true }), true)) return undefined;
    return remembered;
  }

  return {
    async answersAgain(ctx, presented) {
      // The client the provider authenticated: its window, and the only one a remembered answer is for.
      const client = ctx.oidc.client;
      const seconds = client ? secondsFor(factsOf(client)) : 0;
      if (!client || seconds <= 0) return false;
      try {
        // Single flight: the first presentation in the window goes on to the grant; a retry or a
        // twin gets its answer (or, when that may not be given again, reuse detection).
        if (await grace.claim(presented, seconds)) {
          claimed.set(ctx, { token: presented, seconds });
          return false;
        }
        const remembered = await answerFor(ctx, presented, client.clientId);
        if (!remembered) return false;
        again.set(ctx, remembered);
        // Its client authenticated: the request counts against the client's budget (rate-limits.ts).
        limits.authenticated(ctx);
        return true;
      } catch {
        // A store that fails here is the provider's to report (503), not ours.
        return false;
      }
    },

    async middleware(ctx, next) {
      await next();
      const remembered = again.get(ctx);
      if (remembered) {
        ctx.status = 200;
        ctx.set(NO_STORE);
        ctx.body = remembered.body;
        return;
      }
      const first = claimed.get(ctx);
      if (!first) return;
      const body = ctx.body as Record<string, unknown> | undefined;
      const client = ctx.status === 200 && body && typeof body.refresh_token === 'string' ? ctx.oidc?.client : undefined;
      const answered = client ? { clientId: client.clientId, body: body!, jkt: dpopKeyOf(ctx.get('DPoP')) ?? UNREADABLE_KEY } : undefined;
      await grace.settle(first.token, answered, first.seconds).catch(() => {});
    },
  };
}
