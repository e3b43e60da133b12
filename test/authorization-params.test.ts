// The authorization request's parameters are bounded (src/oauth/authorization-params.ts): the
// provider keeps them with the request for an hour, so an oversized one is refused before
// anything is stored — redirected as invalid_request when the client and redirect_uri are valid
// (RFC 6749 4.1.2.1), shown on the error page when they are not.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl } from './support/oauth.ts';
import { approvedClient, REDIRECT, type TestClient } from './support/fixtures.ts';
import { MAX_PARAM_LENGTH, MAX_STATE_LENGTH } from '../src/oauth/authorization-params.ts';

describe('authorization parameter bounds (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let client: TestClient;

  beforeAll(async () => {
    server = await startTestServer(storage);
    client = await approvedClient(server, ['PROFILE_READ']);
  });
  afterAll(() => server?.close());

  /** The interactions the provider keeps (each authorization request that reached sign-in). */
  async function storedInteractions(): Promise<number> {
    if (server.redis) return (await server.redis.redis.keys(`${server.redis.prefix}Interaction:*`)).length;
    const row = await server.pg.db('oidc_models').where('model', 'Interaction').count({ count: '*' }).first();
    return Number(row?.count);
  }

  const request = (params: Record<string, string>) =>
    new Browser().get(authorizeUrl(server.url, { client_id: client.client_id, redirect_uri: REDIRECT, scope: 'PROFILE_READ', state: 's', ...params }));

  it('keeps a state of 2,048 characters, and redirects a longer one as invalid_request without storing or echoing it', async () => {
    const before = await storedInteractions();
    const within = await request({ state: 'a'.repeat(MAX_STATE_LENGTH) });
    expect(within.status).toBe(303);
    expect(within.location).toContain('/interaction/');
    expect(await storedInteractions()).toBe(before + 1);

    const over = await request({ state: 'a'.repeat(7000) });
    expect(over.status).toBe(303);
    const back = new URL(over.location!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toBe(`the state parameter must be at most ${MAX_STATE_LENGTH} characters`);
    expect(back.searchParams.get('iss')).toBe(`${server.url}/v2/auth/oauth2`);
    expect(back.searchParams.has('state')).toBe(false);
    expect(await storedInteractions()).toBe(before + 1);
  });

  it('bounds every other parameter the provider keeps (the endpoint takes GET only: the URL limit bounds them all together)', async () => {
    const before = await storedInteractions();
    // (nonce, acr_values, claims_locales, max_age, id_token_hint need openid scope, which the
    // provider refuses first: such a request stores nothing either.)
    for (const name of ['login_hint', 'ui_locales', 'display']) {
      const res = await request({ [name]: 'a'.repeat(MAX_PARAM_LENGTH + 1) });
      const back = new URL(res.location!);
      expect(back.searchParams.get('error'), name).toBe('invalid_request');
      expect(back.searchParams.get('error_description'), name).toBe(`the ${name} parameter must be at most ${MAX_PARAM_LENGTH} characters`);
      expect(back.searchParams.get('state'), name).toBe('s');
    }
    expect(await storedInteractions()).toBe(before);
  });

  it('shows the error page, redirecting nowhere, when the client or the redirect_uri is not valid', async () => {
    const cases: Record<string, string>[] = [{ client_id: 'ffffffffffffffffffffffffffffffff' }, { client_id: 'x'.repeat(3000) }, { redirect_uri: 'https://evil.example/cb' }];
    for (const params of cases) {
      const res = await request({ state: 'a'.repeat(3000), ...params });
      expect(res.status, JSON.stringify(params).slice(0, 60)).toBe(400);
      expect(res.location).toBeUndefined();
    }
  });
});
