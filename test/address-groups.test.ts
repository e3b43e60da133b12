// Every per-address limit counts an IPv6 address as its /64 (one subscriber's usual share: counted
// address by address it would have 2^64 fresh counters) and an IPv4-mapped IPv6 address as the
// IPv4 address it is (src/http/client-address.ts): the token endpoints' failures, the sign-in
// forms' failures and the credential revocation endpoint, over real HTTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { approvedClient, type TestClient } from './support/fixtures.ts';

describe('per-address limits group addresses (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let client: TestClient;
  beforeAll(async () => {
    server = await startTestServer(storage, {
      TRUST_PROXY: '1', // X-Forwarded-For says the address
      RATE_LIMIT_AUTH_FAILURES: '1000',
      RATE_LIMIT_AUTH_FAILURES_PER_IP: '4',
      RATE_LIMIT_SIGNIN_FAILURES_PER_HOUR_PER_IP: '3',
      RATE_LIMIT_SIGNIN_CHALLENGE_WORK: '2',
      RATE_LIMIT_SIGNIN_CHALLENGE_MAX_WORK: '16',
    });
    client = await approvedClient(server, ['PROFILE_READ']);
  });
  afterAll(() => server?.close());

  /** A failed client authentication at the token endpoint from `ip`: 401, or 429 once held back. */
  const wrongSecret = async (ip: string) => {
    const res = await fetch(`${server.url}/v2/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: 'x', client_id: client.client_id, client_secret: 'wrong' }),
    });
    await res.arrayBuffer();
    return res.status;
  };

  it('token endpoints: failures from addresses of one /64 share a count; another /64 has its own; ::ffff:a.b.c.d is a.b.c.d', async () => {
    for (let i = 1; i <= 4; i++) expect(await wrongSecret(`2001:db8:7:1::${i}`)).toBe(401);
    expect(await wrongSecret('2001:db8:7:1:ffff:ffff:ffff:ffff')).toBe(429);
    expect(await wrongSecret('2001:DB8:7:1::5')).toBe(429); // any spelling of the same /64
    expect(await wrongSecret('2001:db8:7:2::1')).toBe(401);

    for (let i = 0; i < 4; i++) expect(await wrongSecret('::ffff:198.51.100.90')).toBe(401);
    expect(await wrongSecret('198.51.100.90')).toBe(429);
    expect(await wrongSecret('198.51.100.91')).toBe(401);
  });

  it('sign-in: failures from addresses of one /64 share the address count that asks for proof of work; another /64 has its own', async () => {
    const formFrom = (ip: string) => new Browser().request(`${server.url}/login`, { headers: { 'x-forwarded-for': ip } });
    const fail = async (ip: string) => {
      const browser = new Browser();
      const page = await browser.request(`${server.url}/login`, { headers: { 'x-forwarded-for': ip } });
      const res = await browser.request(`${server.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': ip },
        body: new URLSearchParams({ csrf: page.$('input[name=csrf]').first().val() as string, email: `nobody-${Math.random()}@example.com`, password: 'guess' }).toString(),
      });
      expect(res.status).toBe(401);
    };
    const asksWork = async (ip: string) => (await formFrom(ip)).$('altcha-widget').length > 0;

    for (const ip of ['2001:db8:8:1::a', '2001:db8:8:1::b', '2001:db8:8:1:1:2:3:4']) await fail(ip);
    expect(await asksWork('2001:db8:8:1::d')).toBe(true);
    expect(await asksWork('2001:db8:8:2::a')).toBe(false);

    for (let i = 0; i < 3; i++) await fail('::ffff:198.51.100.92');
    expect(await asksWork('198.51.100.92')).toBe(true);
    expect(await asksWork('198.51.100.93')).toBe(false);
  });

  it('credential revocation: 30 reports a minute per /64', async () => {
    const report = async (ip: string) => {
      const res = await fetch(`${server.url}/v2/auth/credentials/revoke`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify({ credentials: ['x'] }) });
      await res.arrayBuffer();
      return res.status;
    };
    for (let i = 1; i <= 30; i++) expect(await report(`2001:db8:9:1::${i.toString(16)}`)).toBe(202);
    expect(await report('2001:db8:9:1::ffff')).toBe(429);
    expect(await report('2001:db8:9:2::1')).toBe(202);
  });
});
