// Redirect URI matching: exact string comparison, except RFC 8252 7.3 (a public native client's
// loopback redirect may use any port).
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { authorizeUrl } from './support/oauth.ts';
import { operator } from './support/fixtures.ts';
import { clientsAddRedirectUri, clientsCreate, clientsSetStatus, clientsShow } from '../src/admin/commands.ts';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer('sql');
});
afterAll(() => server?.close());

async function client(redirectUris: string[], kind: 'public' | 'confidential') {
  const created = await clientsCreate(operator(server), { name: 'R', redirectUri: redirectUris, scope: ['PROFILE_READ'], public: kind === 'public' });
  await clientsSetStatus(operator(server), created.client_id, 'approved');
  return created.client_id;
}

const pkce = () => ({ code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'), code_challenge_method: 'S256' });

/** 'accepted' when the request reaches sign-in, 'refused' when the error page is shown. */
async function outcome(clientId: string, redirectUri: string, extra: Record<string, string> = {}) {
  const page = await new Browser().follow(authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, scope: 'PROFILE_READ', state: 's', ...extra }), server.url);
  if (page.status === 200 && page.$('input[name=password]').length) return 'accepted';
  expect(page.location).toBeUndefined(); // an untrusted redirect_uri is never redirected to
  return 'refused';
}

describe('redirect URI matching', () => {
  it('is exact for a confidential client, loopback included', async () => {
    const id = await client(['http://localhost:8080/cb', 'https://app.example.com/cb'], 'confidential');
    expect(await outcome(id, 'http://localhost:8080/cb')).toBe('accepted');
    expect(await outcome(id, 'https://app.example.com/cb')).toBe('accepted');
    for (const uri of ['http://localhost:8081/cb', 'http://127.0.0.1:8080/cb', 'https://app.example.com/cb/', 'https://APP.example.com/cb', 'https://app.example.com/cb?x=1', 'https://app.example.com:443/cb']) {
      expect(await outcome(id, uri), uri).toBe('refused');
    }
  });

  it('accepts any port on a public native client loopback redirect, and nothing else', async () => {
    const id = await client(['http://127.0.0.1/callback', 'com.example.app:/oauth'], 'public');
    expect(await outcome(id, 'http://127.0.0.1:53682/callback', pkce())).toBe('accepted');
    expect(await outcome(id, 'http://127.0.0.1/callback', pkce())).toBe('accepted');
    expect(await outcome(id, 'com.example.app:/oauth', pkce())).toBe('accepted');
    for (const uri of ['http://127.0.0.1:53682/other', 'http://localhost:53682/callback', 'com.example.app:/other', 'com.evil.app:/oauth']) {
      expect(await outcome(id, uri, pkce()), uri).toBe('refused');
    }
  });
});

describe('redirect URI registration', () => {
  it('refuses "*" anywhere, saying that matching is exact (scripts; the pages use the same rule)', async () => {
    const wildcards = ['http://127.0.0.1:9/*', 'https://*.example.com/cb', 'https://app.example.com/cb/*', 'https://app.example.com/cb?next=*', 'com.example.app:/*'];
    for (const uri of wildcards) {
      await expect(clientsCreate(operator(server), { name: 'W', redirectUri: [uri], scope: ['PROFILE_READ'], public: true }), uri).rejects.toThrow(/matched exactly.*"\*" is not a wildcard/);
    }
    const id = await client(['https://app.example.com/cb'], 'confidential');
    for (const uri of wildcards.slice(0, 4)) {
      await expect(clientsAddRedirectUri(operator(server), id, uri), uri).rejects.toThrow(/matched exactly/);
    }
    expect((await clientsShow(operator(server), id)).redirect_uris).toEqual(['https://app.example.com/cb']);
  });
});
