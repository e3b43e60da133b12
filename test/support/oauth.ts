// Steps of the authorization code flow as a client and a user perform them, over real HTTP.
import { expect } from 'vitest';
import { Browser, type Page } from './browser.ts';

export interface TestUser {
  email: string;
  password: string;
}

export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  scope?: string;
  state?: string;
  [extra: string]: string | undefined;
}

export function authorizeUrl(base: string, params: AuthorizeParams): string {
  const query = new URLSearchParams({ response_type: 'code' });
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.set(k, v);
  return `${base}/auth/oauth2/authorize?${query}`;
}

/** Authorization request → sign-in page (if no session) → consent page; returns the consent page. */
export async function reachConsent(browser: Browser, base: string, request: AuthorizeParams | URL, user: TestUser): Promise<Page> {
  const url = request instanceof URL ? request.href : authorizeUrl(base, request);
  let page = await browser.follow(url, base);
  if (page.$('input[name=password]').length) {
    page = await browser.submit(page, 'form:has(input[name=password])', { email: user.email, password: user.password });
    expect(page.status).toBe(303);
    page = await browser.follow(page.location!, base);
  }
  return page;
}

/** The whole user side: sign in and click Allow; returns the redirect back to the client. */
export async function authorize(browser: Browser, base: string, request: AuthorizeParams | URL, user: TestUser): Promise<URL> {
  const consent = await reachConsent(browser, base, request, user);
  const afterAllow = await browser.submit(consent, 'button:contains("Allow")');
  expect(afterAllow.status).toBe(303);
  const final = await browser.follow(afterAllow.location!, base);
  expect(final.location, `expected a redirect to the client, got ${final.status}: ${final.html.slice(0, 500)}`).toBeDefined();
  return new URL(final.location!);
}

export interface TokenResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

export async function tokenRequest(
  base: string,
  fields: Record<string, string>,
  { as = 'form', basic }: { as?: 'form' | 'json'; basic?: [string, string] } = {},
): Promise<TokenResponse> {
  const headers: Record<string, string> = { 'content-type': as === 'json' ? 'application/json' : 'application/x-www-form-urlencoded' };
  if (basic) {
    const [id, secret] = basic.map((v) => encodeURIComponent(v));
    headers.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
  }
  const res = await fetch(`${base}/v2/auth/oauth2/token`, {
    method: 'POST',
    headers,
    body: as === 'json' ? JSON.stringify(fields) : new URLSearchParams(fields).toString(),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

export async function getMe(base: string, accessToken?: string) {
  const res = await fetch(`${base}/v2/me`, accessToken ? { headers: { authorization: `Bearer ${accessToken}` } } : {});
  return { status: res.status, body: (await res.json()) as Record<string, any>, challenge: res.headers.get('www-authenticate') };
}
