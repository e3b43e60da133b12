// The OAuth side of the benchmark, over real HTTP with a cookie jar: a scripted user signs in and
// consents, the client exchanges codes and refreshes tokens. Our server is driven with the test
// suite's own helpers (test/support); the bare oidc-provider with the same browser through its
// development interactions (any login, then "Continue").
import { Browser } from '../../test/support/browser.ts';
import { authorize, authorizeUrl, type TestUser } from '../../test/support/oauth.ts';

export const REDIRECT_URI = 'https://app.example.com/callback';

export interface Target {
  kind: 'ours' | 'bare';
  base: string;
  tokenPath: string;
  /** The endpoint that verifies a bearer token: /v2/auth/check (ours) or userinfo (bare). */
  bearerPath: string;
  clientId: string;
  clientSecret: string;
  scope: string;
  /** Users to sign in as (ours: real accounts; bare: any login). */
  users: TestUser[];
}

export function basicAuth(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

function authorizationRequest(target: Target, state: string): string {
  const params = { client_id: target.clientId, redirect_uri: REDIRECT_URI, scope: target.scope, state };
  if (target.kind === 'ours') return authorizeUrl(target.base, params);
  return `${target.base}/auth?${new URLSearchParams({ response_type: 'code', ...params })}`;
}

function codeOf(back: URL): string {
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`expected a code on the redirect back to the client, got ${back.href}`);
  return code;
}

/** Sign-in and consent in `browser` (a fresh one: no session yet); returns the code. */
export async function signInAndConsent(target: Target, browser: Browser, user: TestUser): Promise<string> {
  const url = authorizationRequest(target, 'bench');
  if (target.kind === 'ours') return codeOf(await authorize(browser, target.base, new URL(url), user));

  let page = await browser.follow(url, target.base);
  if (page.$('input[name=prompt][value=login]').length) {
    page = await browser.submit(page, 'form:has(input[name=prompt][value=login])', { login: user.email, password: user.password });
    if (!page.location) throw new Error(`bare provider sign-in: ${page.status} ${page.html.slice(0, 300)}`);
    page = await browser.follow(page.location, target.base);
  }
  if (page.$('input[name=prompt][value=consent]').length) {
    page = await browser.submit(page, 'form:has(input[name=prompt][value=consent])');
    if (!page.location) throw new Error(`bare provider consent: ${page.status} ${page.html.slice(0, 300)}`);
    page = await browser.follow(page.location, target.base);
  }
  if (!page.location) throw new Error(`bare provider: expected a redirect to the client, got ${page.status} ${page.html.slice(0, 300)}`);
  return codeOf(new URL(page.location));
}

/** Another code in a browser that is signed in and has consented: one authorization request. */
export async function nextCode(target: Target, browser: Browser, state: string): Promise<string> {
  const page = await browser.follow(authorizationRequest(target, state), target.base);
  if (!page.location) throw new Error(`expected a code without interaction, got ${page.status} ${page.html.slice(0, 300)}`);
  return codeOf(new URL(page.location));
}

export interface TokenResponse {
  access_token: string;
  refresh_token: string;
  scope?: string;
}

export async function tokenCall(target: Target, fields: Record<string, string>, secret = target.clientSecret): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${target.base}${target.tokenPath}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basicAuth(target.clientId, secret) },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

export async function exchange(target: Target, code: string): Promise<TokenResponse> {
  const res = await tokenCall(target, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI });
  if (res.status !== 200 || typeof res.body.refresh_token !== 'string') {
    throw new Error(`${target.kind}: code exchange gave ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body as unknown as TokenResponse;
}

/** Runs `task(i)` for i < count with at most `concurrency` at a time; results in order. */
export async function pool<T>(count: number, concurrency: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      results[i] = await task(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

/**
 * `count` authorization codes from `grants` separate browser sessions (one sign-in and consent
 * each, then plain authorization requests), so that no single grant collects thousands of tokens.
 * Codes live 60 s: call this right before the timed run that spends them.
 */
export async function mintCodes(target: Target, count: number, grants: number, concurrency = 16): Promise<string[]> {
  grants = Math.max(1, Math.min(grants, count));
  const browsers = await pool(grants, Math.min(concurrency, 8), async (g) => {
    const browser = new Browser();
    const first = await signInAndConsent(target, browser, target.users[g % target.users.length]!);
    return { browser, first };
  });
  const codes = browsers.map((b) => b.first);
  const remaining = count - codes.length;
  const extra = await pool(remaining, concurrency, (i) => nextCode(target, browsers[i % grants]!.browser, `c${i}`));
  return codes.concat(extra);
}

/** Refresh tokens for the refresh case: one code exchange each, spread over `grants` sessions. */
export async function mintRefreshTokens(target: Target, count: number, grants: number): Promise<string[]> {
  const codes = await mintCodes(target, count, grants);
  const tokens = await pool(codes.length, 8, (i) => exchange(target, codes[i]!));
  return tokens.map((t) => t.refresh_token);
}

export interface FlowRun {
  flows: number;
  failures: number;
  firstError?: string;
  durationSec: number;
  rps: number;
  latencyMs: number[];
}

/**
 * The whole interactive flow, repeated for `durationSec` with `concurrency` users at a time: a
 * fresh browser, the authorization request, sign-in, consent (Allow), the code exchange.
 */
export async function runFlows(target: Target, durationSec: number, concurrency: number, maxFlows = 100_000): Promise<FlowRun> {
  const latencyMs: number[] = [];
  let failures = 0;
  let firstError: string | undefined;
  let started = 0;
  const t0 = performance.now();
  const deadline = t0 + durationSec * 1000;
  const worker = async () => {
    while (performance.now() < deadline && started < maxFlows) {
      const i = started++;
      const begin = performance.now();
      try {
        const code = await signInAndConsent(target, new Browser(), target.users[i % target.users.length]!);
        await exchange(target, code);
        latencyMs.push(performance.now() - begin);
      } catch (err) {
        failures++;
        firstError ??= (err as Error).message.slice(0, 500);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - t0) / 1000;
  return { flows: latencyMs.length, failures, ...(firstError ? { firstError } : {}), durationSec: elapsed, rps: latencyMs.length / elapsed, latencyMs };
}
