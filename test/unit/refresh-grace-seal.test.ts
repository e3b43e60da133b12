// The refresh grace window's remembered answers: sealed under a key only the presented refresh
// token gives, and answers sealed by the previous release (HKDF key) still open after a deploy.
import { createCipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { open, seal } from '../../src/oauth/refresh-grace.ts';

const token = randomBytes(32).toString('base64url');
const remembered = { clientId: 'app', body: { access_token: 'a', refresh_token: 'r' } };

/** As the previous release sealed: AES-256-GCM under HKDF-SHA256(token). */
function sealedByPreviousRelease(): string {
  const key = Buffer.from(hkdfSync('sha256', token, Buffer.alloc(0), 'refresh-grace:key', 32));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(remembered), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64url');
}

describe('refresh grace: sealed answers', () => {
  it('open with the token that sealed them, and with no other', () => {
    const sealed = seal(token, remembered);
    expect(open(token, sealed)).toEqual(remembered);
    expect(open(randomBytes(32).toString('base64url'), sealed)).toBeUndefined();
    expect(sealed).not.toContain('refresh_token');
  });

  it('never repeat a nonce', () => {
    const nonces = new Set(Array.from({ length: 2000 }, () => Buffer.from(seal(token, remembered), 'base64url').subarray(0, 12).toString('hex')));
    expect(nonces.size).toBe(2000);
  });

  it('refuse a tampered answer', () => {
    const raw = Buffer.from(seal(token, remembered), 'base64url');
    raw[raw.length - 1]! ^= 1;
    expect(open(token, raw.toString('base64url'))).toBeUndefined();
  });

  it('sealed by the previous release still open (a retry across a deploy is not taken for reuse)', () => {
    expect(open(token, sealedByPreviousRelease())).toEqual(remembered);
  });
});
