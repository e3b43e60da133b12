// The token cache's one safety rule beside dropping what a revocation names: a lookup that was on
// its way when a revocation (or a reconnection) happened is answered, but not kept — it may have
// read the token just before its deletion, and keeping it would serve a revoked token from memory.
import { describe, expect, it } from 'vitest';
import type { AdapterPayload } from 'oidc-provider';
import { TokenCache, type Revoked } from '../../src/storage/token-cache.ts';

/** A load that answers when the test says so: the lookup is "on its way" until then. */
function slowLoad(payload: AdapterPayload) {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  return { load: () => answered.then(() => ({ ...payload })), answer };
}

const token = (key: string): AdapterPayload => ({ jti: key, grantId: `grant-of-${key}`, clientId: `client-of-${key}`, exp: Math.floor(Date.now() / 1000) + 3600 });

/** Whether the next read of `key` is served from memory (its load is not called). */
async function servedFromMemory(cache: TokenCache, key: string): Promise<boolean> {
  let loaded = false;
  await cache.read(key, async () => ((loaded = true), token(key)));
  return !loaded;
}

describe('the token cache', () => {
  it('keeps a lookup that no revocation raced (the rule the others are measured against)', async () => {
    const cache = new TokenCache();
    cache.setLive(true);
    const { load, answer } = slowLoad(token('t0'));
    const read = cache.read('t0', load);
    answer();
    await read;
    expect(await servedFromMemory(cache, 't0')).toBe(true);
  });

  const revocations: Array<[string, (key: string) => Revoked]> = [
    ['the token itself', (key) => ({ token: key })],
    ['its grant', (key) => ({ grant: `grant-of-${key}` })],
    ['its client', (key) => ({ client: `client-of-${key}` })],
    ['another token', () => ({ token: 'some-other-token' })],
  ];
  for (const [name, revoked] of revocations) {
    it(`does not keep a lookup that was on its way when a revocation of ${name} arrived`, async () => {
      const cache = new TokenCache();
      cache.setLive(true);
      const { load, answer } = slowLoad(token('t1'));
      const read = cache.read('t1', load);
      cache.drop(revoked('t1')); // the revocation arrives while the lookup is on its way
      answer(); // the lookup read the token before its deletion
      expect(await read).toMatchObject({ jti: 't1' }); // answered (the caller judges it) ...
      expect(await servedFromMemory(cache, 't1')).toBe(false); // ... but the next lookup reads again
    });
  }

  it('does not keep a lookup that was on its way when the channel was lost and regained', async () => {
    const cache = new TokenCache();
    cache.setLive(true);
    const { load, answer } = slowLoad(token('t2'));
    const read = cache.read('t2', load);
    cache.setLive(false); // messages may be missed from here ...
    cache.setLive(true); // ... until the subscription is confirmed again
    answer();
    await read;
    expect(await servedFromMemory(cache, 't2')).toBe(false);
  });
});
