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
// expires with the window.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomFillSync } from 'node:crypto';
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { SingleFlights } from '../storage/artifacts.ts';
import { presentedCredentials } from './client-credentials.ts';
import type { ClientWithBudget, TokenEndpointLimits } from './rate-limits.ts';

type Next = () => Promise<void>;

/** How long a concurrent twin may wait for the first presentation's answer. */
const WAIT_FOR_FIRST_MS = 3000;
const POLL_MS = 25;

export interface Remembered {
  clientId: string;
  body: Record<string, unknown>;
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

/** The refresh token a token request presents, when it is a refresh (the body as our app read it). */
function presentedRefreshToken(ctx: KoaContextWithOIDC): { token: string; params: URLSearchParams } | undefined {
  if (ctx.method !== 'POST' || ctx.path !== '/token') return undefined;
  const body = (ctx.req as { body?: unknown }).body;
  const params = new URLSearchParams(typeof body === 'string' ? body : '');
  const token = params.get('refresh_token');
  return params.get('grant_type') === 'refresh_token' && token ? { token, params } : undefined;
}

const flightOf = (token: string) => `refresh-grace:${idOf(token)}`;

/** The single flight of each presented refresh token within the window (see the header). */
export interface RefreshFlights {
  /** True for the first presentation in the window, which goes on to the grant. */
  claim(token: string): Promise<boolean>;
  /** The first presentation's outcome: its answer (a 200 with a new refresh token), or undefined when it failed. */
  settle(token: string, answered: Remembered | undefined): Promise<void>;
  /** The flight of `token` as claimed and settled with this answer at once (its SingleFlights key). */
  settled(token: string, answered: Remembered): { key: string; value: string; seconds: number };
}

/** Undefined when the window is off (0 seconds). */
export function refreshFlights(flights: SingleFlights, windowSeconds: number): RefreshFlights | undefined {
  if (windowSeconds <= 0) return undefined;
  return {
    claim: (token) => flights.claim(flightOf(token), windowSeconds),
    settle: (token, answered) => flights.settle(flightOf(token), answered ? seal(token, answered) : FAILED, windowSeconds),
    settled: (token, answered) => ({ key: flightOf(token), value: seal(token, answered), seconds: windowSeconds }),
  };
}

export function refreshGrace(provider: Provider, flights: SingleFlights, windowSeconds: number, limits: Pick<TokenEndpointLimits, 'spend'>) {
  const grace = refreshFlights(flights, windowSeconds);
  /** The same client, authenticated as the provider would (its secret, unless it is public). */
  async function sameClient(ctx: KoaContextWithOIDC, params: URLSearchParams, clientId: string) {
    const presented = presentedCredentials(ctx.get('Authorization'), Object.fromEntries(params));
    if (presented.clientId !== clientId) return undefined;
    const client = await provider.Client.find(clientId);
    if (!client) return undefined;
    if (client.clientAuthMethod === 'none') return client;
    return presented.secret !== undefined && (await client.compareClientSecret(presented.secret)) ? client : undefined;
  }

  /**
   * The first presentation's answer, waited for while it is on its way. A first presentation
   * that failed (a wrong secret, say) leaves a mark that ends the wait at once.
   */
  async function rememberedAnswer(token: string): Promise<Remembered | undefined> {
    const deadline = Date.now() + WAIT_FOR_FIRST_MS;
    for (;;) {
      const stored = await flights.read(flightOf(token));
      if (stored === undefined || stored === FAILED || Date.now() > deadline) return undefined;
      if (stored !== '') return open(token, stored);
      await sleep(POLL_MS);
    }
  }

  /** Answers with the remembered response if it may be given again; false when reuse detection must run. */
  async function answerAgain(ctx: KoaContextWithOIDC, token: string, params: URLSearchParams): Promise<boolean> {
    const remembered = await rememberedAnswer(token);
    const client = remembered && (await sameClient(ctx, params, remembered.clientId));
    if (!client) return false;
    // Only while the new refresh token is unused (and so the grant alive): otherwise it is reuse.
    const next = await provider.RefreshToken.find(String(remembered.body.refresh_token));
    if (!next || next.consumed) return false;
    // Its client authenticated: the request counts against the client's budget, as any other.
    await limits.spend(client as unknown as ClientWithBudget, ctx.ip, ctx.req).catch(() => {});
    ctx.status = 200;
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = remembered.body;
    return true;
  }

  return async function refreshRetriesGetTheSameAnswer(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
    const presented = grace ? presentedRefreshToken(ctx) : undefined;
    if (!grace || !presented) return next();
    const { token, params } = presented;
    // Single flight: the first presentation in the window goes to the provider; a retry or a twin
    // gets its answer (or, when that may not be given again, reuse detection by the provider).
    // Junk is claimed too, and marked failed after the provider's invalid_grant: one key for the
    // window, cheaper than looking every token up first. A store that fails here is the
    // provider's to report (503), not ours.
    let first = false;
    try {
      first = await grace.claim(token);
      if (!first && (await answerAgain(ctx, token, params))) return;
    } catch {
      first = false;
    }
    await next();
    if (!first) return;
    const body = ctx.body as Record<string, unknown> | undefined;
    const answered = ctx.status === 200 && body && typeof body.refresh_token === 'string' && ctx.oidc?.client;
    await grace.settle(token, answered ? { clientId: ctx.oidc.client!.clientId, body: body! } : undefined).catch(() => {});
  };
}
