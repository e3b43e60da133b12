// Secret matching, presented credentials, registration rules and CSRF binding: pure functions, no storage.
import { describe, expect, it } from 'vitest';
import type { Context } from 'koa';
import { generateClientSecret, hashClientSecret, matchClientSecret } from '../../src/clients/secrets.ts';
import { validateClientName, validateRedirectUri } from '../../src/clients/validate.ts';
import { csrfToken, csrfValid } from '../../src/http/csrf.ts';
import { namedClientId } from '../../src/oauth/named-client.ts';

describe('client secrets', () => {
  it('are 256-bit random values in the credential format, matched by hash against every active secret', () => {
    const [a, b] = [generateClientSecret(), generateClientSecret()];
    // spcs_, 43 base62 characters (256 bits), a 6-character checksum (docs/credentials.md).
    expect(a).toMatch(/^spcs_[0-9A-Za-z]{49}$/);
    expect(a).not.toBe(b);
    const stored = [
      { id: 1, hash: hashClientSecret(a) },
      { id: 2, hash: hashClientSecret(b) },
    ];
    expect(matchClientSecret(a, stored)).toBe(1);
    expect(matchClientSecret(b, stored)).toBe(2);
    expect(matchClientSecret(`${a}x`, stored)).toBeUndefined();
    expect(matchClientSecret('', stored)).toBeUndefined();
    expect(matchClientSecret(a, [{ id: 3, hash: 'not-hex' }])).toBeUndefined();
    expect(hashClientSecret(a)).not.toContain(a);
    // A secret issued before the format (base64url) still matches its hash.
    const older = '1dn0suZd1Ahgz9RiXphGE6Nvlc889abhS6dQszkVT9U';
    expect(matchClientSecret(older, [{ id: 4, hash: hashClientSecret(older) }])).toBe(4);
  });
});

describe('registration rules', () => {
  it('accepts https, loopback http, and private-use schemes for public clients only', () => {
    expect(validateRedirectUri('https://app.example.com/cb', 'confidential')).toBe('https://app.example.com/cb');
    expect(validateRedirectUri('http://127.0.0.1:8080/cb', 'public')).toBe('http://127.0.0.1:8080/cb');
    expect(validateRedirectUri('com.example.app:/cb', 'public')).toBe('com.example.app:/cb');
    for (const [uri, kind, why] of [
      ['http://app.example.com/cb', 'confidential', /https/],
      ['com.example.app:/cb', 'confidential', /public clients/],
      ['https://app.example.com/cb#x', 'public', /fragment/],
      ['https://user:pw@app.example.com/cb', 'public', /credentials/],
      ['https://*.example.com/cb', 'public', /matched exactly/],
      ['http://127.0.0.1:9/*', 'public', /matched exactly/],
      ['not a url', 'public', /absolute URL/],
    ] as const) {
      expect(() => validateRedirectUri(uri, kind), uri).toThrow(why);
    }
  });

  it('refuses names with control or text-direction characters', () => {
    expect(validateClientName('  Calendar Sync  ')).toBe('Calendar Sync');
    for (const name of ['', 'x'.repeat(101), 'a\nstatus: approved', 'evil\u202egnp.exe', 'a\u001b]0;x\u0007']) expect(() => validateClientName(name), JSON.stringify(name)).toThrow();
  });
});

describe('CSRF tokens', () => {
  const ctx = (site?: string, key = 'cookie-key-1') => ({ app: { keys: [key] }, get: (h: string) => (h === 'Sec-Fetch-Site' ? (site ?? '') : '') }) as unknown as Context;

  it('are bound to what they were minted for and to the current cookie key', () => {
    const token = csrfToken(ctx(), 'session:abc');
    expect(csrfValid(ctx(), 'session:abc', token)).toBe(true);
    expect(csrfValid(ctx(), 'session:abd', token)).toBe(false);
    expect(csrfValid(ctx(), 'visitor:abc', token)).toBe(false);
    expect(csrfValid(ctx(undefined, 'cookie-key-2'), 'session:abc', token)).toBe(false);
    expect(csrfValid(ctx(), 'session:abc', '')).toBe(false);
    expect(csrfValid(ctx(), 'session:abc', token.slice(1))).toBe(false);
  });

  it('are accepted only from the same origin, a direct navigation, or a client that sends no Fetch Metadata', () => {
    const token = csrfToken(ctx(), 'interaction:u1');
    expect(['same-origin', 'none', undefined].map((site) => csrfValid(ctx(site), 'interaction:u1', token))).toEqual([true, true, true]);
    expect(['same-site', 'cross-site'].map((site) => csrfValid(ctx(site), 'interaction:u1', token))).toEqual([false, false]);
  });
});

describe('the client id a request names (what the limits count by)', () => {
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  const assertion = (claims: object) => ['{"alg":"ES256"}', JSON.stringify(claims), 'sig'].map((part) => Buffer.from(part).toString('base64url')).join('.');
  const id = '0123456789abcdef0123456789abcdef'; // the registry's form (src/clients/secrets.ts)

  it('reads HTTP Basic first, its user form-urlencoded (RFC 6749 2.3.1), whatever the body says', () => {
    expect(namedClientId(basic(id, 'a%2Bb:c+d'), { client_id: 'other' })).toBe(id);
    expect(namedClientId(basic('https%3A%2F%2Fapp.example%2Fclient.json', ''), undefined)).toBe('https://app.example/client.json');
    expect(namedClientId(basic('%E0%A4%A', 'x'), { client_id: id })).toBeUndefined(); // not form-encoded: names nothing
  });

  it('falls back to client_id, then to a client assertion\'s subject (RFC 7523 3), unverified', () => {
    expect(namedClientId('', { client_id: id, client_secret: 's' })).toBe(id);
    expect(namedClientId('', { client_assertion: assertion({ sub: 'https://agent.example/doc.json' }) })).toBe('https://agent.example/doc.json');
    expect(namedClientId('', { client_assertion: 'not a jwt' })).toBeUndefined();
    expect(namedClientId('', { client_assertion: assertion({ sub: 7 }) })).toBeUndefined();
    expect(namedClientId('Bearer abc', { client_id: ['a', 'b'] })).toBeUndefined();
    expect(namedClientId('', undefined)).toBeUndefined();
  });
});
