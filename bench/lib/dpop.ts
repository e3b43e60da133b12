// DPoP proofs (RFC 9449) for the benchmark's feeds: one ES256 key per run, and a proof for every
// request — its own jti (each is accepted once), the request's htm and htu, the token's ath, iat now.
import { createHash, randomUUID, sign } from 'node:crypto';
import type { DpopKey } from '../../test/support/dpop-key.ts';

export { dpopKey } from '../../test/support/dpop-key.ts';

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** `count` feed lines (bench/lib/feed.lua: "DPoP token<TAB><TAB>proof"), cycling over `tokens`. */
export function dpopLines(key: DpopKey, tokens: string[], htm: string, htu: string, count: number): string[] {
  const header = part({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk });
  const ath = tokens.map((t) => createHash('sha256').update(t).digest('base64url'));
  const iat = Math.floor(Date.now() / 1000);
  const lines = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const t = i % tokens.length;
    const input = `${header}.${part({ jti: randomUUID(), htm, htu, iat, ath: ath[t] })}`;
    lines[i] = `DPoP ${tokens[t]}\t\t${input}.${sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  }
  return lines;
}
