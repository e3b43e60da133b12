// Issue 34 item 3: the fast path leaves the same traces as the provider's path. The same generated
// requests (fast-check) go to two servers, one with the fast path on and one with FAST_PATHS=off;
// the answers must agree (tokens aside), and so must the side effects: the provider events emitted,
// and whether the client secret's and the grant's last use were recorded.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { startTestServer, type TestServer } from './support/server.ts';
import { eventually } from './support/eventually.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor, type TestClient } from './support/fixtures.ts';
import { authorize, authorizeUrl, tokenRequest } from './support/oauth.ts';
import { Browser } from './support/browser.ts';
import { clientsCreate, clientsSetKeys, clientsSetStatus } from '../src/admin/commands.ts';
import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import { comparable, raw, type Raw } from './support/raw-http.ts';
import { boundTokensFor } from './support/bindings.ts';
import { CREDENTIAL_PATTERNS, credentialKind } from '../src/credentials/format.ts';
import { agentTokens, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { dpopKey, proof } from './support/dpop.ts';

const TOKEN = '/v2/auth/oauth2/token';
const INTROSPECT = '/v2/auth/oauth2/introspect';
const SCOPE = 'PROFILE_READ BOOKING_READ';
/** A resource server's resource (RFC 8707), registered on both sides. */
const MCP = 'https://mcp.example.com/mcp';
const EVENTS = ['refresh_token.consumed', 'refresh_token.saved', 'access_token.saved', 'grant.success', 'grant.error', 'grant.revoked', 'introspection.error'];

interface Side {
  server: TestServer;
  app: TestClient;
  other: TestClient;
  user: Awaited<ReturnType<typeof newUser>>;
  events: string[];
}

let on: Side;
let off: Side;
// Client ID metadata documents for both sides (docs/agents.md), served on the loopback.
let docs: DocumentServer;

async function side(env: Record<string, string>): Promise<Side> {
  const server = await startTestServer('redis', env);
  const [app, other] = await Promise.all([approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']), approvedClient(server, ['PROFILE_READ'], 'Other App')]);
  const rs = await clientsCreate(operator(server), { name: 'MCP server', resourceServer: true, resourceUri: MCP, scope: ['PROFILE_READ'] });
  await clientsSetStatus(operator(server), rs.client_id, 'approved');
  const events: string[] = [];
  for (const name of EVENTS) server.system.provider.on(name as 'grant.success', () => void events.push(name));
  return { server, app, other, user: await newUser(server), events };
}

beforeAll(async () => {
  // Last uses are recorded once a minute per secret and grant (src/storage/last-use.ts): the clock
  // moves a minute on before each request, so that each records what it would.
  vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
  [on, off, docs] = await Promise.all([side({ FAST_PATHS: 'on', CIMD_ALLOW_LOOPBACK: 'true' }), side({ FAST_PATHS: 'off', CIMD_ALLOW_LOOPBACK: 'true' }), startDocumentServer()]);
});
afterAll(async () => {
  vi.useRealTimers();
  await Promise.all([on?.server.close(), off?.server.close(), docs?.close()]);
});

type Credentials = 'basic' | 'post' | 'wrong' | 'other' | 'none';
type Presented = 'live' | 'spent' | 'junk' | 'access' | 'refresh';
interface Case {
  endpoint: 'refresh' | 'introspect';
  credentials: Credentials;
  presented: Presented;
  extra: '' | 'scope' | 'unknown' | 'twice' | 'hint' | 'resource' | 'widen';
  /** The resource named at authorization (RFC 8707): none (the platform API, no audience stored), the platform API, or the MCP server. */
  resource: 'none' | 'platform' | 'mcp';
  /** A grant bound to an organization and teams (src/orgs/bindings.ts): its tokens carry org_id and team_ids. */
  bound: boolean;
}

const cases = fc
  .record<Case>({
    endpoint: fc.constantFrom('refresh', 'introspect'),
    credentials: fc.constantFrom('basic', 'basic', 'post', 'wrong', 'other', 'none'),
    presented: fc.constantFrom('live', 'live', 'spent', 'junk', 'access', 'refresh'),
    extra: fc.constantFrom('', '', '', 'scope', 'unknown', 'twice', 'hint', 'resource', 'widen'),
    bound: fc.boolean(),
    resource: fc.constantFrom('none', 'none', 'platform', 'mcp'),
  })
  // Bound grants come from an organization's consent (test/support/bindings.ts), without resources.
  .map((c) => (c.bound ? { ...c, resource: 'none' as const } : c));

/** A token family whose authorization and code exchange named `resource` (RFC 8707). */
async function tokensForResource(s: Side, resource: string) {
  const url = new URL(authorizeUrl(s.server.url, { client_id: s.app.client_id, redirect_uri: REDIRECT, scope: SCOPE, state: 's' }));
  url.searchParams.append('resource', resource);
  const code = (await authorize(new Browser(), s.server.url, url, s.user)).searchParams.get('code')!;
  const res = await tokenRequest(s.server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, resource, ...s.app });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string };
}

/** The resource a case names: the granted one on `resource`, another on `widen`. */
function resourceNamed(s: Side, c: Case): string {
  const platform = `${s.server.url}/v2`;
  if (c.extra === 'resource') return c.resource === 'mcp' ? MCP : platform;
  return c.resource === 'mcp' ? platform : MCP;
}

const BINDING = { orgId: 10, teamIds: [3, 1] };

/** The request of a case, on one side: a fresh token family, last uses cleared. */
async function request(s: Side, c: Case): Promise<{ headers: Record<string, string>; body: string }> {
  const tokens = c.bound
    ? await boundTokensFor(s.server, s.app, String(s.user.id), SCOPE, BINDING)
    : c.resource === 'none'
      ? await tokensFor(s.server, s.app, s.user, SCOPE)
      : await tokensForResource(s, c.resource === 'mcp' ? MCP : `${s.server.url}/v2`);
  if (c.presented === 'spent') {
    const first = await raw(s.server.url, 'POST', TOKEN, { 'content-type': 'application/x-www-form-urlencoded' }, `grant_type=refresh_token&refresh_token=${tokens.refresh_token}&client_id=${s.app.client_id}&client_secret=${s.app.client_secret}`);
    expect(first.status).toBe(200);
  }
  const value = { live: c.endpoint === 'refresh' ? tokens.refresh_token : tokens.access_token, spent: tokens.refresh_token, junk: 'junk', access: tokens.access_token, refresh: tokens.refresh_token }[c.presented];
  const client = c.credentials === 'other' ? s.other : c.credentials === 'wrong' ? { ...s.app, client_secret: 'wrong' } : s.app;
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  let body = c.endpoint === 'refresh' ? `grant_type=refresh_token&refresh_token=${value}` : `token=${value}`;
  if (c.credentials === 'post') body += `&client_id=${client.client_id}&client_secret=${client.client_secret}`;
  else if (c.credentials !== 'none') headers.authorization = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
  body += { '': '', scope: '&scope=PROFILE_READ', unknown: '&foo=bar', twice: c.endpoint === 'refresh' ? `&refresh_token=${value}` : `&token=${value}`, hint: '&token_type_hint=access_token', resource: '', widen: '' }[c.extra];
  if (c.extra === 'resource' || c.extra === 'widen') body += `&resource=${encodeURIComponent(resourceNamed(s, c))}`;
  await clearTraces(s);
  return { headers, body };
}

/** Last uses cleared, written uses flushed first: what the next request records is what is seen. */
async function clearTraces(s: Side) {
  await Promise.all([s.server.system.grantUses.flush(), s.server.system.secretUses.flush()]);
  await s.server.pg.db('user_grants').where({ client_id: s.app.client_id }).update({ last_used_at: null });
  await s.server.pg.db('oauth_client_secrets').update({ last_used_at: null });
  s.events.length = 0;
  vi.setSystemTime(Date.now() + 61_000);
}

/** The answer, its token values replaced by their shape, so that two issuances compare. */
function shaped(answer: Raw, server: string) {
  const body = JSON.parse(answer.body) as Record<string, unknown>;
  for (const key of ['access_token', 'refresh_token', 'jti', 'sub', 'client_id', 'exp', 'iat', 'iss']) if (key in body) body[key] = typeof body[key];
  // The platform API's audience names each side's own address.
  if (typeof body.aud === 'string') body.aud = body.aud.replaceAll(server, '<server>');
  const { 'content-length': _length, ...headers } = comparable(answer).headers;
  for (const name in headers) if (typeof headers[name] === 'string') headers[name] = (headers[name] as string).replaceAll(server, '<server>');
  return { status: answer.status, headers, body };
}

/** What the request left behind: events, and whether the secret's and the grant's last use were recorded. */
async function traces(s: Side) {
  await Promise.all([s.server.system.grantUses.flush(), s.server.system.secretUses.flush()]);
  const secretUsed = (await s.server.pg.db('oauth_client_secrets').whereNotNull('last_used_at').pluck('client_id')).map((id) => (id === s.app.client_id ? 'app' : 'other')).sort();
  const grantUsed = (await s.server.pg.db('user_grants').where({ client_id: s.app.client_id }).whereNotNull('last_used_at')).length > 0;
  return { events: [...s.events], secretUsed, grantUsed };
}

/**
 * What a refresh issued, as stored: the access token's extra claims (a bound grant's binding),
 * audience (RFC 8707) and scope, and the new refresh token's granted resources.
 */
async function issuedExtra(s: Side, answer: Raw) {
  const issued = answer.status === 200 ? (JSON.parse(answer.body) as { access_token?: string; refresh_token?: string }) : undefined;
  if (!issued?.access_token) return undefined;
  const access = await s.server.system.provider.AccessToken.find(issued.access_token);
  const refresh = issued.refresh_token ? await s.server.system.provider.RefreshToken.find(issued.refresh_token) : undefined;
  const named = (value: unknown) => (value === undefined ? null : JSON.parse(JSON.stringify(value).replaceAll(s.server.url, '<server>')));
  return { extra: access?.extra ?? null, aud: named(access?.aud), scope: access?.scope ?? null, resource: named(refresh?.resource) };
}

async function both(c: Case) {
  const results = [];
  for (const s of [on, off]) {
    const { headers, body } = await request(s, c);
    const answer = await raw(s.server.url, 'POST', c.endpoint === 'refresh' ? TOKEN : INTROSPECT, headers, body);
    results.push({ answer: shaped(answer, s.server.url), issued: await issuedExtra(s, answer), ...(await traces(s)) });
  }
  return results as [(typeof results)[0], (typeof results)[0]];
}

describe('the fast path and the provider leave the same traces (FAST_PATHS on and off)', () => {
  it('the plain cases are answered on the fast path, with the provider’s events and last uses', async () => {
    const [fast, provider] = await both({ endpoint: 'refresh', credentials: 'basic', presented: 'live', extra: '', bound: false, resource: 'none' });
    expect(fast).toEqual(provider);
    expect(fast.issued).toEqual({ extra: null, aud: null, scope: SCOPE, resource: null });
    expect(fast.events).toEqual(['refresh_token.consumed', 'refresh_token.saved', 'access_token.saved', 'grant.success']);
    expect(fast).toMatchObject({ secretUsed: ['app'], grantUsed: true });
    const [fastIntrospection, providerIntrospection] = await both({ endpoint: 'introspect', credentials: 'basic', presented: 'live', extra: '', bound: false, resource: 'none' });
    expect(fastIntrospection).toEqual(providerIntrospection);
    expect(fastIntrospection).toMatchObject({ secretUsed: ['app'], answer: { status: 200, body: { active: true, aud: '<server>/v2' } } });
    // Both were the fast path's to answer.
    const served = (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.filter((v) => v.labels.outcome === 'served');
    expect(served.map((v) => v.labels.route).sort()).toEqual(['introspection', 'token']);
    expect(served.map((v) => v.value)).toEqual([1, 1]);
  });

  it('bound tokens too: the same binding on the refreshed token, the same introspection answer, both on the fast path', async () => {
    const [fast, provider] = await both({ endpoint: 'refresh', credentials: 'basic', presented: 'live', extra: '', bound: true, resource: 'none' });
    expect(fast).toEqual(provider);
    expect(fast).toMatchObject({ issued: { extra: { org_id: '10', team_ids: ['1', '3'] } }, secretUsed: ['app'], grantUsed: true });
    expect(fast.events).toEqual(['refresh_token.consumed', 'refresh_token.saved', 'access_token.saved', 'grant.success']);
    const [fastIntrospection, providerIntrospection] = await both({ endpoint: 'introspect', credentials: 'basic', presented: 'live', extra: '', bound: true, resource: 'none' });
    expect(fastIntrospection).toEqual(providerIntrospection);
    expect(fastIntrospection.answer).toMatchObject({ status: 200, body: { active: true, org_id: '10', team_ids: ['1', '3'] } });
    const served = (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.filter((v) => v.labels.outcome === 'served');
    expect(served.map((v) => v.value)).toEqual([2, 2]);
  });

  it('tokens from both paths are of the documented formats, with their checksums (docs/credentials.md)', async () => {
    const servedBefore = async () => (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.find((v) => v.labels.route === 'token' && v.labels.outcome === 'served')?.value ?? 0;
    const before = await servedBefore();
    for (const s of [on, off]) {
      const { headers, body } = await request(s, { endpoint: 'refresh', credentials: 'basic', presented: 'live', extra: '', bound: false, resource: 'none' });
      const issued = JSON.parse((await raw(s.server.url, 'POST', TOKEN, headers, body)).body) as Record<string, string>;
      expect(issued.access_token).toMatch(CREDENTIAL_PATTERNS.access_token);
      expect(issued.refresh_token).toMatch(CREDENTIAL_PATTERNS.refresh_token);
      expect([credentialKind(issued.access_token!), credentialKind(issued.refresh_token!)]).toEqual(['access_token', 'refresh_token']);
      // Its last use recorded before the next test clears them (the fast path records after answering).
      await eventually(async () => expect((await traces(s)).grantUsed).toBe(true));
    }
    // The first was the fast path's refresh.
    expect(await servedBefore()).toBe(before + 1);
  });

  it('tokens for a resource (RFC 8707): the same audience answered and stored; a refresh of one, or naming one, is the provider’s', async () => {
    const servedBefore = async () => (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.filter((v) => v.labels.outcome === 'served').map((v) => `${v.labels.route}:${v.value}`).sort();
    const before = await servedBefore();
    const [fastIntrospection, providerIntrospection] = await both({ endpoint: 'introspect', credentials: 'basic', presented: 'live', extra: '', bound: false, resource: 'mcp' });
    expect(fastIntrospection).toEqual(providerIntrospection);
    expect(fastIntrospection.answer).toMatchObject({ status: 200, body: { active: true, aud: MCP, scope: 'PROFILE_READ' } });
    // Introspection of a token with an audience is answered on the fast path…
    expect(await servedBefore()).not.toEqual(before);
    const afterIntrospection = await servedBefore();
    for (const c of [
      { extra: '', resource: 'mcp' }, // a refresh token granted a resource: kept
      { extra: 'resource', resource: 'mcp' }, // named again
      { extra: 'widen', resource: 'mcp' }, // widened: invalid_target, nothing spent
      { extra: 'resource', resource: 'none' }, // a token without one names the platform API: invalid_target
      { extra: 'resource', resource: 'platform' },
    ] as const) {
      const [fast, provider] = await both({ endpoint: 'refresh', credentials: 'basic', presented: 'live', bound: false, ...c });
      expect(fast, JSON.stringify(c)).toEqual(provider);
      if (c.extra === 'widen' || c.resource === 'none') expect(fast.answer, JSON.stringify(c)).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
      else expect(fast.issued, JSON.stringify(c)).toMatchObject({ aud: c.resource === 'mcp' ? MCP : '<server>/v2', resource: c.resource === 'mcp' ? MCP : '<server>/v2' });
    }
    // …a refresh of one, or one naming a resource, never.
    expect(await servedBefore()).toEqual(afterIntrospection);
  });

  it('agree on answers and side effects over generated requests', async () => {
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const [fast, provider] = await both(c);
        expect(fast, JSON.stringify(c)).toEqual(provider);
      }),
      { numRuns: Number(process.env.PARITY_RUNS ?? 24), endOnFailure: true },
    );
  });

  it('a metadata-document client’s refresh is the provider’s: handed over before anything is written, with the same answer and the unreviewed tier’s lifetime', async () => {
    const clientId = docs.agent('/parity-agent.json');
    const handedOver = async () =>
      (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.filter((v) => v.labels.route === 'token' && v.labels.outcome === 'handed_over' && v.labels.reason === 'not_plain').reduce((n, v) => n + v.value, 0);
    const before = await handedOver();
    const results = [];
    for (const s of [on, off]) {
      const tokens = await agentTokens(s.server.url, clientId, s.user, 'PROFILE_READ');
      // With a client_secret it looks like the fast path's plain case; without one it is not.
      const withSecret = await raw(s.server.url, 'POST', TOKEN, { 'content-type': 'application/x-www-form-urlencoded' }, `grant_type=refresh_token&refresh_token=${tokens.refresh_token}&client_id=${encodeURIComponent(clientId)}&client_secret=anything`);
      const plain = await raw(s.server.url, 'POST', TOKEN, { 'content-type': 'application/x-www-form-urlencoded' }, `grant_type=refresh_token&refresh_token=${tokens.refresh_token}&client_id=${encodeURIComponent(clientId)}`);
      const issued = await s.server.system.provider.RefreshToken.find((JSON.parse(plain.body) as { refresh_token: string }).refresh_token);
      results.push({ withSecret: shaped(withSecret, s.server.url), plain: shaped(plain, s.server.url), lifetime: issued!.exp! - issued!.iat! <= 7 * 86_400 });
    }
    expect(results[0]).toEqual(results[1]);
    expect(results[0]).toMatchObject({ withSecret: { status: 401, body: { error: 'invalid_client' } }, plain: { status: 200 }, lifetime: true });
    // The code exchange and both refreshes handed over as not plain, before the fast path read anything.
    expect(await handedOver()).toBe(before + 3);
  });

  it('DPoP (RFC 9449): whatever carries a proof or a bound token is the provider’s, handed over before anything is written, with the same answers', async () => {
    const fastPath = async () =>
      (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.map((v) => `${v.labels.route}:${v.labels.outcome}:${v.labels.reason ?? ''}:${v.value}`).sort();
    const key = dpopKey();
    const results = [];
    let before: string[] = [];
    for (const s of [on, off]) {
      const htu = `${s.server.url}${TOKEN}`;
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const basic = { ...form, authorization: `Basic ${Buffer.from(`${s.app.client_id}:${s.app.client_secret}`).toString('base64')}` };
      const code = (await authorize(new Browser(), s.server.url, { client_id: s.app.client_id, redirect_uri: REDIRECT, scope: SCOPE, state: 's' }, s.user)).searchParams.get('code')!;
      const issued = JSON.parse((await raw(s.server.url, 'POST', TOKEN, { ...basic, dpop: proof(key, 'POST', htu) }, `grant_type=authorization_code&code=${code}&redirect_uri=${encodeURIComponent(REDIRECT)}`)).body) as { access_token: string; refresh_token: string; token_type: string };
      expect(issued.token_type).toBe('DPoP');
      if (s === on) before = await fastPath();
      const refresh = `grant_type=refresh_token&refresh_token=${issued.refresh_token}`;
      // Made just before each request (the clock moves a minute before each); one proof twice.
      let used = '';
      const reused = () => (used ||= proof(key, 'POST', htu));
      const ago = () => Math.floor(Date.now() / 1000) - 3600;
      const cases: Array<[string, () => Record<string, string>, string, string]> = [
        ['introspect the bound token', () => basic, INTROSPECT, `token=${issued.access_token}`],
        ['introspect the bound token, a proof beside', () => ({ ...basic, dpop: proof(key, 'POST', `${s.server.url}${INTROSPECT}`) }), INTROSPECT, `token=${issued.access_token}`],
        ['refresh: another htm', () => ({ ...basic, dpop: proof(key, 'GET', htu) }), TOKEN, refresh],
        ['refresh: another htu', () => ({ ...basic, dpop: proof(key, 'POST', 'https://evil.example/token') }), TOKEN, refresh],
        ['refresh: expired', () => ({ ...basic, dpop: proof(key, 'POST', htu, undefined, { iat: ago() }) }), TOKEN, refresh],
        ['refresh: alg none', () => ({ ...basic, dpop: proof(key, 'POST', htu, undefined, {}, { alg: 'none' }) }), TOKEN, refresh],
        ['refresh: two proofs', () => ({ ...basic, dpop: `${proof(key, 'POST', htu)}, ${proof(key, 'POST', htu)}` }), TOKEN, refresh],
        ['refresh: valid', () => ({ ...basic, dpop: reused() }), TOKEN, refresh],
        ['refresh: replayed', () => ({ ...basic, dpop: reused() }), TOKEN, refresh],
        ['refresh: another key', () => ({ ...basic, dpop: proof(dpopKey(), 'POST', htu) }), TOKEN, refresh],
      ];
      const answers = [];
      for (const [what, headers, path, body] of cases) {
        // The replay within the proof's window: the clock is not moved before it.
        if (what === 'refresh: replayed') s.events.length = 0;
        else await clearTraces(s);
        const answer = shaped(await raw(s.server.url, 'POST', path, headers(), body), s.server.url);
        // A nonce is a value of the minute: its presence compares.
        if ('dpop-nonce' in answer.headers) answer.headers['dpop-nonce'] = typeof answer.headers['dpop-nonce'];
        answers.push({ what, answer, ...(await traces(s)) });
      }
      results.push(answers);
    }
    expect(results[0]).toEqual(results[1]);
    const [introspected, beside, , , , , , valid, replayed, spent] = results[0]!;
    expect(introspected!.answer.body).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: key.jkt } });
    expect(beside!.answer.body).toEqual(introspected!.answer.body);
    expect(valid!.answer).toMatchObject({ status: 200, body: { token_type: 'DPoP' } });
    // The replay spends nothing (the proof is refused first); the token the valid one spent is then reuse.
    expect(replayed!.answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(spent!.answer).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    for (const refused of results[0]!.slice(2, 7)) expect(refused.answer.status, refused.what).toBe(400);
    // Nothing of it was the fast path's: every request handed over, none served or failed.
    const after = await fastPath();
    expect(after.filter((v) => !before.includes(v)).every((v) => v.includes(':handed_over:'))).toBe(true);
    expect(after.filter((v) => v.includes(':served:'))).toEqual(before.filter((v) => v.includes(':served:')));
  });

  it('private_key_jwt (RFC 7523): a client with keys is the provider’s — assertions valid, replayed, for another audience, and its revoked secret — handed over before anything is written, with the same answers', async () => {
    const fastPath = async () =>
      (await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).values.map((v) => `${v.labels.route}:${v.labels.outcome}:${v.labels.reason ?? ''}:${v.value}`).sort();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] });
    const signed = (clientId: string, aud: string) => {
      const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const input = `${part({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${part({ iss: clientId, sub: clientId, aud, jti: randomUUID(), iat: now, exp: now + 60 })}`;
      return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    };
    const results = [];
    let before: string[] = [];
    for (const s of [on, off]) {
      const keyed = await approvedClient(s.server, ['PROFILE_READ', 'BOOKING_READ'], 'Keyed App');
      await clientsSetKeys(operator(s.server), keyed.client_id, { jwks });
      const form = { 'content-type': 'application/x-www-form-urlencoded' };
      const aud = `${s.server.url}${TOKEN}`;
      const assertion = (jwt: string) => `client_assertion_type=${encodeURIComponent('urn:ietf:params:oauth:client-assertion-type:jwt-bearer')}&client_assertion=${jwt}`;
      const code = (await authorize(new Browser(), s.server.url, { client_id: keyed.client_id, redirect_uri: REDIRECT, scope: SCOPE, state: 's' }, s.user)).searchParams.get('code')!;
      const issued = JSON.parse((await raw(s.server.url, 'POST', TOKEN, form, `grant_type=authorization_code&code=${code}&redirect_uri=${encodeURIComponent(REDIRECT)}&${assertion(signed(keyed.client_id, aud))}`)).body) as { access_token: string; refresh_token: string };
      expect(issued.access_token).toBeTruthy();
      if (s === on) before = await fastPath();
      const revokedSecret = { ...form, authorization: `Basic ${Buffer.from(`${keyed.client_id}:${keyed.client_secret}`).toString('base64')}` };
      let used = '';
      const reused = () => (used ||= signed(keyed.client_id, aud));
      const cases: Array<[string, Record<string, string>, string, () => string]> = [
        ['introspect: the revoked secret', revokedSecret, INTROSPECT, () => `token=${issued.access_token}`],
        ['introspect: the secret posted', form, INTROSPECT, () => `token=${issued.access_token}&client_id=${keyed.client_id}&client_secret=${keyed.client_secret}`],
        ['introspect: an assertion', form, INTROSPECT, () => `token=${issued.access_token}&${assertion(signed(keyed.client_id, aud))}`],
        ['refresh: the revoked secret', revokedSecret, TOKEN, () => `grant_type=refresh_token&refresh_token=${issued.refresh_token}`],
        ['refresh: another audience', form, TOKEN, () => `grant_type=refresh_token&refresh_token=${issued.refresh_token}&${assertion(signed(keyed.client_id, 'https://evil.example/token'))}`],
        ['refresh: valid', form, TOKEN, () => `grant_type=refresh_token&refresh_token=${issued.refresh_token}&${assertion(reused())}`],
        ['refresh: replayed', form, TOKEN, () => `grant_type=refresh_token&refresh_token=${issued.refresh_token}&${assertion(reused())}`],
      ];
      const answers = [];
      for (const [what, headers, path, body] of cases) {
        // The replay within the assertion's life: the clock is not moved before it.
        if (what === 'refresh: replayed') s.events.length = 0;
        else await clearTraces(s);
        answers.push({ what, answer: shaped(await raw(s.server.url, 'POST', path, headers, body()), s.server.url), ...(await traces(s)) });
      }
      results.push(answers);
    }
    expect(results[0]).toEqual(results[1]);
    const [bySecret, posted, introspected, refreshBySecret, otherAudience, valid, replayed] = results[0]!;
    for (const refused of [bySecret, posted, refreshBySecret, otherAudience, replayed]) expect(refused!.answer, refused!.what).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(introspected!.answer).toMatchObject({ status: 200, body: { active: true } });
    expect(valid!.answer).toMatchObject({ status: 200, body: { token_type: 'bearer' } });
    // Nothing of it was the fast path's: every request handed over, none served or failed.
    const after = await fastPath();
    expect(after.filter((v) => !before.includes(v)).every((v) => v.includes(':handed_over:'))).toBe(true);
    expect(after.filter((v) => v.includes(':served:'))).toEqual(before.filter((v) => v.includes(':served:')));
  });

  it('with FAST_PATHS=off, the fast path answers nothing', async () => {
    expect(await off.server.system.metrics.registry.getSingleMetric('oauth_fast_path_requests_total')!.get()).toMatchObject({ values: [] });
    expect((await off.server.system.metrics.registry.getSingleMetric('oauth_fast_path_on')!.get()).values[0]!.value).toBe(0);
    expect((await on.server.system.metrics.registry.getSingleMetric('oauth_fast_path_on')!.get()).values[0]!.value).toBe(1);
  });
});
