// The credential format (src/credentials/format.ts, docs/credentials.md): prefixes, randomness,
// checksum, and the patterns documented for secret scanners. Pure functions, no storage.
import fs from 'node:fs';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  checksumOf,
  crc32Ascii,
  CREDENTIAL_LENGTH,
  CREDENTIAL_PATTERNS,
  CREDENTIAL_PREFIXES,
  credentialHint,
  credentialKind,
  generateCredential,
  hasOurPrefix,
  refusedAs,
  type CredentialKind,
} from '../../src/credentials/format.ts';

const KINDS = Object.keys(CREDENTIAL_PREFIXES) as CredentialKind[];
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('credential format', () => {
  it('computes the checksum as zlib.crc32 does (docs/credentials.md gives scanners zlib.crc32)', () => {
    fc.assert(fc.property(fc.string({ unit: fc.constantFrom(...`${BASE62}_`), maxLength: 80 }), (text) => crc32Ascii(text) === crc32(text)), { numRuns: 2000 });
    for (const kind of KINDS) {
      const value = generateCredential(kind);
      expect(crc32Ascii(value.slice(0, 48))).toBe(crc32(value.slice(0, 48)));
    }
  });

  it('each kind has its prefix, 43 random base62 characters and a 6-character CRC32 checksum', () => {
    for (const kind of KINDS) {
      const value = generateCredential(kind);
      expect(value).toHaveLength(CREDENTIAL_LENGTH);
      expect(value.startsWith(CREDENTIAL_PREFIXES[kind])).toBe(true);
      expect(value).toMatch(CREDENTIAL_PATTERNS[kind]);
      expect(value.slice(-6)).toBe(checksumOf(value.slice(0, -6)));
      expect(credentialKind(value)).toBe(kind);
      expect(refusedAs(kind, value)).toBe(false);
      for (const other of KINDS.filter((k) => k !== kind)) {
        expect(value).not.toMatch(CREDENTIAL_PATTERNS[other]);
        expect(refusedAs(other, value)).toBe(true);
      }
    }
  });

  it('the documented patterns are the ones in force (docs/credentials.md)', () => {
    const doc = fs.readFileSync(new URL('../../docs/credentials.md', import.meta.url), 'utf8');
    for (const kind of KINDS) expect(doc).toContain(CREDENTIAL_PATTERNS[kind].source);
  });

  it('the random part is uniform base62 (every character drawn, none favoured)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i += 1) for (const c of generateCredential('access_token').slice(5, 48)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (2000 * 43) / 62;
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.2);
    expect(new Set(Array.from({ length: 1000 }, () => generateCredential('refresh_token'))).size).toBe(1000);
  });

  it('any one changed character fails the checksum or the form', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KINDS), fc.nat({ max: CREDENTIAL_LENGTH - 1 }), fc.constantFrom(...BASE62, '_', '-', '.', ' ', 'é'), (kind, at, replacement) => {
        const value = generateCredential(kind);
        fc.pre(value[at] !== replacement);
        const changed = value.slice(0, at) + replacement + value.slice(at + 1);
        expect(credentialKind(changed)).toBeUndefined();
        // Still one of our prefixes: refused wherever it is sent. A broken prefix is no longer ours (an older credential's form): the store decides.
        if (hasOurPrefix(changed)) for (const k of KINDS) expect(refusedAs(k, changed)).toBe(true);
        else expect(at).toBeLessThan(5);
      }),
      { numRuns: 2000 },
    );
  });

  it('truncated, extended, garbage and older (unprefixed) values', () => {
    const value = generateCredential('access_token');
    for (const bad of [value.slice(0, -1), `${value}0`, value.slice(0, 20), 'spat_', `${value} `, 'spat_'.padEnd(54, '0')]) {
      expect(credentialKind(bad)).toBeUndefined();
      expect(refusedAs('access_token', bad)).toBe(true);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (junk) => {
        expect(credentialKind(junk)).toBeUndefined();
      }),
    );
    // An older credential (the library's nanoid, or a base64url secret) is not refused here: the store decides.
    for (const older of ['b6O-hYsFqGTcZ3mF1x1Z1Cq2AaRkLhk0vmrlDCnXl7k', '1dn0suZd1Ahgz9RiXphGE6Nvlc889abhS6dQszkVT9U', 'sp_x', 'SPAT_abc']) {
      for (const kind of KINDS) expect(refusedAs(kind, older)).toBe(false);
    }
  });

  it('the one-pass check agrees with the rule as written: a prefix, 49 base62 characters, the last 6 the checksum of the rest', () => {
    const byRule = (value: string) => {
      const kind = KINDS.find((k) => value.startsWith(CREDENTIAL_PREFIXES[k]));
      return kind && /^sp(?:at|rt|ac|cs)_[0-9A-Za-z]{49}$/.test(value) && value.slice(-6) === checksumOf(value.slice(0, -6)) ? kind : undefined;
    };
    const near = fc.tuple(fc.constantFrom(...KINDS), fc.nat({ max: CREDENTIAL_LENGTH - 1 }), fc.string({ maxLength: 2 })).map(([kind, at, insert]) => {
      const value = generateCredential(kind);
      return value.slice(0, at) + insert + value.slice(at + insert.length);
    });
    // Checksums that fit in 6 digits only by their leading zeros, and values with every digit at the edges.
    const edges = ['spat_' + '0'.repeat(49), 'sprt_' + 'z'.repeat(49), 'spac_' + 'Z'.repeat(43) + '000000', 'spcs_' + '9'.repeat(43) + 'zzzzzz'];
    for (const value of edges) expect(credentialKind(value)).toBe(byRule(value));
    fc.assert(fc.property(fc.oneof(near, fc.string({ unit: fc.constantFrom(...`${BASE62}_sp`), minLength: 54, maxLength: 54 }), fc.string({ maxLength: 60 })), (value) => credentialKind(value) === byRule(value)), { numRuns: 5000 });
    for (let i = 0; i < 2000; i += 1) for (const kind of KINDS) expect(byRule(generateCredential(kind))).toBe(kind);
  });

  it('a scanner finds them in text by their pattern, and the hint does not give them away', () => {
    const value = generateCredential('client_secret');
    const text = `config: {"secret":"${value}"} and spcs_short and x${generateCredential('access_token')}`;
    expect(text.match(new RegExp(CREDENTIAL_PATTERNS.client_secret.source, 'g'))).toEqual([value]);
    expect(text.match(new RegExp(CREDENTIAL_PATTERNS.access_token.source, 'g'))).toBeNull(); // glued to a word: not a token boundary
    const hint = credentialHint(value);
    expect(hint).toBe(`spcs_…${value.slice(-4)}`);
    expect(hint.length).toBeLessThan(12);
  });
});
