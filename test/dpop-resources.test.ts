// DPoP (RFC 9449; docs/dpop.md) where tokens are used: /v2/me and the gateway check accept a bound
// token only as `DPoP <token>` with a valid proof of the request the client made, each proof once
// across every instance (both stores); every refusal carries the DPoP challenge (RFC 9449 7.1).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anotherInstance, startTestServer, type AppInstance, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, codeFor, newUser, REDIRECT, type TestClient } from './support/fixtures.ts';
import { dpopKey, getWith, proof, tokenPost, type DpopKey } from './support/dpop.ts';
import { DPOP_ALGS } from '../src/oauth/dpop.ts';

// The public address a gateway in front forwards (publicUrl in src/api/access.ts).
const FORWARDED = { 'x-forwarded-host': 'api.example', 'x-forwarded-proto': 'https' };
const ME = 'https://api.example/v2/me';
const CHALLENGE = new RegExp(`^DPoP algs="${DPOP_ALGS.join(' ')}", error="([a-z_]+)"`);

describe.each<Storage>(['redis', 'sql'])('DPoP-bound tokens at /v2/me and the gateway check (%s)', (storage) => {
  let server: TestServer;
  let other: AppInstance;
  let app: TestClient;
  let user: Awaited<ReturnType<typeof newUser>>;
  let key: DpopKey;
  let bound: string;
  let bearer: string;

  beforeAll(async () => {
    server = await startTestServer(storage);
    other = await anotherInstance(server);
    app = await approvedClient(server, ['PROFILE_READ', 'BOOKING_READ']);
    user = await newUser(server);
    key = dpopKey();
    const exchange = async (dpop?: string) => {
      const res = await tokenPost(server, { grant_type: 'authorization_code', code: await codeFor(server, app, user, 'PROFILE_READ BOOKING_READ'), redirect_uri: REDIRECT, ...app }, dpop ? { dpop } : {});
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const body = await exchange(proof(key, 'POST', `${server.url}/v2/auth/oauth2/token`));
    expect(body.token_type).toBe('DPoP');
    bound = body.access_token;
    bearer = (await exchange()).access_token;
  });
  afterAll(async () => {
    await other?.close();
    await server?.close();
  });

  const me = (authorization: string, dpop?: string, at: { url: string } = server, extra: Record<string, string> = {}) => getWith(`${at.url}/v2/me`, authorization, dpop, { ...FORWARDED, ...extra });
  const refusedWith = (res: Awaited<ReturnType<typeof getWith>>, error: string, what = '') => {
    expect(res.status, `${what} ${JSON.stringify(res.body)}`).toBe(401);
    expect(res.body.error.code, what).toBe(error);
    expect(res.headers.get('www-authenticate'), what).toMatch(CHALLENGE);
    expect(CHALLENGE.exec(res.headers.get('www-authenticate')!)![1], what).toBe(error);
  };

  it('/v2/me answers a bound token with a valid proof', async () => {
    const res = await me(`DPoP ${bound}`, proof(key, 'GET', ME, bound));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.id).toBe(user.id);
    // The query and fragment are not part of htu (RFC 9449 4.3).
    expect((await me(`DPoP ${bound}`, proof(key, 'GET', `${ME}?x=1#f`, bound))).status).toBe(200);
  });

  it('refuses a bound token sent as Bearer, with or without a proof (the downgrade)', async () => {
    refusedWith(await me(`Bearer ${bound}`), 'invalid_token');
    refusedWith(await me(`Bearer ${bound}`, proof(key, 'GET', ME, bound)), 'invalid_token');
  });

  it('refuses an unbound token sent as DPoP; a bearer token as Bearer is unchanged', async () => {
    refusedWith(await me(`DPoP ${bearer}`, proof(key, 'GET', ME, bearer)), 'invalid_token');
    expect((await me(`Bearer ${bearer}`)).status).toBe(200);
  });

  it('refuses every bad proof with the right error, and spends nothing: the token works after', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: Array<[string, string | undefined, string]> = [
      ['no proof', undefined, 'invalid_dpop_proof'],
      ['alg none', proof(key, 'GET', ME, bound, {}, { alg: 'none' }), 'invalid_dpop_proof'],
      ['a symmetric alg', proof(key, 'GET', ME, bound, {}, { alg: 'HS256' }), 'invalid_dpop_proof'],
      ['a private jwk', proof(key, 'GET', ME, bound, {}, { jwk: { ...key.jwk, d: 'AAAA' } }), 'invalid_dpop_proof'],
      ['another typ', proof(key, 'GET', ME, bound, {}, { typ: 'JWT' }), 'invalid_dpop_proof'],
      ['another htm', proof(key, 'POST', ME, bound), 'invalid_dpop_proof'],
      ['another htu', proof(key, 'GET', 'https://evil.example/v2/me', bound), 'invalid_dpop_proof'],
      ['another ath', proof(key, 'GET', ME, bearer), 'invalid_dpop_proof'],
      ['no ath', proof(key, 'GET', ME), 'invalid_dpop_proof'],
      ['iat far in the past', proof(key, 'GET', ME, bound, { iat: now - 3600 }), 'invalid_dpop_proof'],
      ['iat far in the future', proof(key, 'GET', ME, bound, { iat: now + 3600 }), 'invalid_dpop_proof'],
      ['no jti', proof(key, 'GET', ME, bound, { jti: undefined }), 'invalid_dpop_proof'],
      ['oversized', proof(key, 'GET', ME, bound, { pad: 'x'.repeat(5000) }), 'invalid_dpop_proof'],
      ['a nonce not ours', proof(key, 'GET', ME, bound, { nonce: 'not-ours' }), 'use_dpop_nonce'],
      ['not a JWT', 'junk', 'invalid_dpop_proof'],
      ['another key', proof(dpopKey(), 'GET', ME, bound), 'invalid_token'],
    ];
    for (const [what, dpop, error] of cases) {
      const res = await me(`DPoP ${bound}`, dpop);
      refusedWith(res, error, what);
      if (error === 'use_dpop_nonce') expect(res.headers.get('dpop-nonce'), what).toBeTruthy();
    }
    // Two DPoP headers: refused, whichever one a server would read.
    const twice = await fetch(`${server.url}/v2/me`, { headers: [['authorization', `DPoP ${bound}`], ['dpop', proof(key, 'GET', ME, bound)], ['dpop', proof(key, 'GET', ME, bound)], ...Object.entries(FORWARDED)] });
    expect(twice.status).toBe(401);
    expect(((await twice.json()) as { error: { code: string } }).error.code).toBe('invalid_dpop_proof');
    expect((await me(`DPoP ${bound}`, proof(key, 'GET', ME, bound))).status).toBe(200);
  });

  it('judges the proof on the Koa routes too (PATCH /v2/me): a bad proof is 401, a good one reaches the scope check, told in the DPoP scheme', async () => {
    const patch = (dpop: string) =>
      fetch(`${server.url}/v2/me`, { method: 'PATCH', headers: { authorization: `DPoP ${bound}`, dpop, 'content-type': 'application/json', ...FORWARDED }, body: JSON.stringify({ name: 'Changed' }) }).then(async (res) => ({ status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers }));
    refusedWith(await patch(proof(key, 'GET', ME, bound)), 'invalid_dpop_proof', 'a GET proof for a PATCH');
    const scoped = await patch(proof(key, 'PATCH', ME, bound));
    expect(scoped.status, JSON.stringify(scoped.body)).toBe(403);
    expect(scoped.headers.get('www-authenticate')).toBe(`DPoP algs="${DPOP_ALGS.join(' ')}", error="insufficient_scope", scope="PROFILE_WRITE"`);
  });

  it("uses a proof once across two instances; a server nonce is accepted by any", async () => {
    const once = proof(key, 'GET', ME, bound);
    expect((await me(`DPoP ${bound}`, once)).status).toBe(200);
    refusedWith(await me(`DPoP ${bound}`, once, other), 'invalid_dpop_proof');
    refusedWith(await me(`DPoP ${bound}`, once), 'invalid_dpop_proof');
    // Concurrent presentations of one proof on both instances: exactly one is answered.
    const racing = proof(key, 'GET', ME, bound);
    const statuses = await Promise.all([server, other, server, other].map((at) => me(`DPoP ${bound}`, racing, at).then((r) => r.status)));
    expect(statuses.sort()).toEqual([200, 401, 401, 401]);
    const offered = (await me(`DPoP ${bound}`, proof(key, 'GET', ME, bound, { nonce: 'not-ours' }))).headers.get('dpop-nonce')!;
    expect((await me(`DPoP ${bound}`, proof(key, 'GET', ME, bound, { nonce: offered }), other)).status).toBe(200);
  });

  describe('the gateway check', () => {
    const check = (authorization: string, dpop: string | undefined, call: { method: string; uri: string }, forwarded: Record<string, string> = { 'x-forwarded-host': 'gw.example', 'x-forwarded-proto': 'https' }) =>
      getWith(`${server.url}/v2/auth/check`, authorization, dpop, { 'x-original-method': call.method, 'x-original-uri': call.uri, ...forwarded });
    const CALL = { method: 'GET', uri: '/v2/bookings?from=today' };
    const HTU = 'https://gw.example/v2/bookings';

    it('allows the call a valid proof is for: its forwarded method and public URL', async () => {
      const res = await getWith(`${server.url}/v2/auth/check`, `DPoP ${bound}`, proof(key, 'GET', HTU, bound), { 'x-original-method': 'GET', 'x-original-uri': CALL.uri, 'x-forwarded-host': 'gw.example', 'x-forwarded-proto': 'https' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers.get('x-auth-client-id')).toBe(app.client_id);
    });

    it('refuses a proof for another call, method or host, a replay, and a bound token as Bearer', async () => {
      refusedWith(await check(`DPoP ${bound}`, proof(key, 'GET', 'https://gw.example/v2/teams', bound), CALL), 'invalid_dpop_proof', 'another path');
      // The method the call was made with, not the check request's own.
      refusedWith(await check(`DPoP ${bound}`, proof(key, 'GET', 'https://gw.example/v2/bookings/1', bound), { method: 'DELETE', uri: '/v2/bookings/1' }), 'invalid_dpop_proof', 'another method');
      refusedWith(await check(`DPoP ${bound}`, proof(key, 'GET', 'https://api.example/v2/bookings', bound), CALL), 'invalid_dpop_proof', 'another host');
      refusedWith(await check(`Bearer ${bound}`, undefined, CALL), 'invalid_token', 'as Bearer');
      // A scope the token lacks: 403, in the scheme the token came in.
      const unscoped = await check(`DPoP ${bound}`, proof(key, 'DELETE', 'https://gw.example/v2/bookings/1', bound), { method: 'DELETE', uri: '/v2/bookings/1' });
      expect(unscoped.status).toBe(403);
      expect(unscoped.headers.get('www-authenticate')).toMatch(/^DPoP algs="[^"]+", error="insufficient_scope", scope="BOOKING_WRITE"$/);
      const once = proof(key, 'GET', HTU, bound);
      expect((await check(`DPoP ${bound}`, once, CALL)).status).toBe(200);
      refusedWith(await check(`DPoP ${bound}`, once, CALL), 'invalid_dpop_proof', 'replayed');
      // A proof spent at the check is spent at /v2/me too (one store of jti): same token, same key.
      expect((await check(`Bearer ${bearer}`, undefined, CALL)).status).toBe(200);
    });

    it('reads the Envoy form: the call in the path, its Host as the public address', async () => {
      const res = await getWith(`${server.url}/v2/auth/check/v2/bookings?from=today`, `DPoP ${bound}`, proof(key, 'GET', 'https://envoy.example/v2/bookings', bound), { 'x-forwarded-host': 'envoy.example', 'x-forwarded-proto': 'https' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    });
  });
});
