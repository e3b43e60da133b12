// Password hashing at OWASP's scrypt cost (N=2^17, r=8, p=1): new hashes, the dummy hash of
// unknown accounts, the rehash of an older hash at its next sign-in, and a bound on the hashing a
// flood of sign-ins can queue. This file runs at the real cost (the other tests use 2^10).
import { randomBytes, scryptSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { Browser } from './support/browser.ts';
import { newUser } from './support/fixtures.ts';
import { PasswordHashingBusy } from '../src/accounts/password.ts';

/** A hash as the server made it before N was raised: scrypt$16384$8$1$salt$hash. */
function oldHash(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32, { N: 16384, r: 8, p: 1 });
  return ['scrypt', 16384, 8, 1, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

const CURRENT = /^scrypt\$131072\$8\$1\$/;

describe('password hashing', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer('sql', { PASSWORD_HASH_LOG_N: '17' });
  });
  afterAll(() => server?.close());

  const storedHash = async (id: number) => (await server.system.db('users').where('id', id).first('password_hash')).password_hash as string;
  const signIn = async (email: string, password: string) => {
    const browser = new Browser();
    return browser.submit(await browser.get(`${server.url}/login`), 'form[action="/login"]', { email, password });
  };

  it('hashes new passwords with N=2^17, r=8, p=1, and the unknown-account check costs the same', async () => {
    const user = await newUser(server);
    expect(await storedHash(user.id)).toMatch(CURRENT);
    expect(await server.system.passwords.dummyHash()).toMatch(CURRENT);
  });

  it('still accepts a password stored at N=2^14 and rehashes it at N=2^17 on that sign-in', async () => {
    const user = await newUser(server);
    await server.system.db('users').where('id', user.id).update({ password_hash: oldHash(user.password) });
    expect((await signIn(user.email, 'not-the-password')).status).toBe(401);
    expect(await storedHash(user.id)).toMatch(/^scrypt\$16384\$/); // a failure changes nothing

    expect((await signIn(user.email, user.password)).status).toBe(303);
    const rehashed = await storedHash(user.id);
    expect(rehashed).toMatch(CURRENT);
    expect(await server.system.passwords.verify(user.password, rehashed)).toBe(true);
    expect((await signIn(user.email, user.password)).status).toBe(303);
  });

  it('bounds the hashing a flood can queue: past the queue a check is refused at once, and a sign-in is asked for proof of work instead (429), never 503', async () => {
    const { passwords } = server.system;
    passwords.setCapacity({ concurrency: 1, maxQueued: 3 });
    try {
      const checks = await Promise.allSettled(Array.from({ length: 12 }, () => passwords.verify('x', oldHash('y'))));
      expect(checks.filter((c) => c.status === 'fulfilled')).toHaveLength(4); // one running, three waiting
      expect(checks.filter((c) => c.status === 'rejected' && c.reason instanceof PasswordHashingBusy)).toHaveLength(8);
      expect(passwords.load()).toEqual({ active: 0, queued: 0 });

      const flood = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(`nobody-${i}@example.com`, 'guess')));
      const statuses = flood.map((p) => p.status);
      expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
      expect(statuses).toContain(429);
      const asked = flood.find((p) => p.status === 429)!;
      expect(asked.$('altcha-widget').attr('challenge')).toBeTruthy();
      expect(asked.$('.alert').text()).toContain('complete the check below');
    } finally {
      passwords.setCapacity({ concurrency: 2, maxQueued: 32 });
    }
  });
});
