// Issue 34 item 2: the fast path checks at start what it takes for granted about the provider
// (src/fast/assumptions.ts) and switches itself off, with one warning, when any of it is not so.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import Provider, { type Configuration } from 'oidc-provider';
import { loadConfig } from '../../src/config.ts';
import { createProvider, type ProviderDeps } from '../../src/oauth/provider.ts';
import { fastPathMismatch, fastPathOn } from '../../src/fast/assumptions.ts';
import { installedLibraryVersion, LIBRARY_VERSION, resolvedConfiguration } from '../../src/seams/oidc-provider.ts';

const ISSUER = 'http://localhost:3000/v2/auth/oauth2';
const jwk = () => ({ ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' });

/** The server's own provider (src/oauth/provider.ts), built without stores: nothing is read at start. */
function ourProvider(): Provider {
  const unused = {} as never;
  const deps = {
    config: loadConfig({ NODE_ENV: 'test' }),
    db: unused,
    artifacts: { adapterFor: () => unused, flights: unused },
    secrets: unused,
    jwks: { keys: [jwk()] },
    tokenLimits: { clientAuthentication: async (_ctx: unknown, next: () => Promise<void>) => next() },
    // No grant is bound (src/orgs/bindings.ts): a marked grant's tokens are then bound to nothing.
    bindings: { forGrant: async () => undefined },
    // No client ID metadata document is fetched here (src/cimd/).
    cimd: { fetch: unused },
    graceWindows: unused,
  } as unknown as ProviderDeps;
  return createProvider(deps);
}

/** A provider as ours, but for one setting. */
function ourProviderWith(change: (configuration: Record<string, unknown>) => void): Record<string, unknown> {
  const configuration = { ...resolvedConfiguration(ourProvider())! };
  change(configuration);
  return configuration;
}

const warnings = () => {
  const lines: Array<{ reason: string; message: string }> = [];
  return { lines, log: { warn: (fields: { reason: string }, message: string) => void lines.push({ ...fields, message }) } };
};

describe('the fast path’s assumptions (src/fast/assumptions.ts)', () => {
  it('hold for the provider of src/oauth/provider.ts on the pinned library version', async () => {
    expect(installedLibraryVersion()).toBe(LIBRARY_VERSION);
    // Pinned exactly: an upgrade is a deliberate change of package.json, LIBRARY_VERSION and the fingerprints.
    const ours = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
    expect(ours.dependencies['oidc-provider']).toBe(LIBRARY_VERSION);
    expect(await fastPathMismatch(resolvedConfiguration(ourProvider()), installedLibraryVersion())).toBeUndefined();
    const { lines, log } = warnings();
    expect(await fastPathOn(ourProvider(), true, log as never)).toBe(true);
    expect(lines).toEqual([]);
  });

  it('do not hold when a setting the fast path relies on changes, each named', async () => {
    const cases: Array<[string, (c: Record<string, unknown>) => void, RegExp]> = [
      ['rotation off', (c) => void (c.rotateRefreshToken = false), /rotateRefreshToken/],
      ['rotation decided per request', (c) => void (c.rotateRefreshToken = () => true), /rotateRefreshToken/],
      ['tokens bound to the session', (c) => void (c.expiresWithSession = async () => true), /expiresWithSession/],
      ['session binding read from the request', (c) => void (c.expiresWithSession = async (ctx: { oidc: unknown }) => Boolean(ctx.oidc)), /expiresWithSession reads the request context/],
      ['the library default (reads the code)', (c) => void (c.expiresWithSession = async (_ctx: unknown, code: { scopes: Set<string> }) => !code.scopes.has('offline_access')), /expiresWithSession/],
      ['a TTL that reads the request', (c) => void (c.ttl = { ...(c.ttl as object), RefreshToken: (ctx: { oidc: unknown }) => (ctx.oidc ? 1 : 2) }), /ttl\.RefreshToken reads the request context/],
      ['an access token TTL of nothing', (c) => void (c.ttl = { ...(c.ttl as object), AccessToken: 0 }), /ttl\.AccessToken/],
      ['extra token claims', (c) => void (c.extraTokenClaims = async () => ({ tenant: 'x' })), /extraTokenClaims/],
      // A binding's claims are known, but only on a bound grant's tokens, and only those, in their types.
      ['binding claims on every token', (c) => void (c.extraTokenClaims = async () => ({ team_ids: ['1'] })), /unbound grant/],
      ['another claim beside the binding', (c) => void (c.extraTokenClaims = async (_ctx: unknown, t: { grantId: string }) => (t.grantId.startsWith('bound.') ? { team_ids: [], tenant: 'x' } : undefined)), /does not know \(tenant/],
      ['an org_id as a number', (c) => void (c.extraTokenClaims = async (_ctx: unknown, t: { grantId: string }) => (t.grantId.startsWith('bound.') ? { org_id: 1, team_ids: [] } : undefined)), /org_id/],
      ['team ids as numbers', (c) => void (c.extraTokenClaims = async (_ctx: unknown, t: { grantId: string }) => (t.grantId.startsWith('bound.') ? { team_ids: [1] } : undefined)), /team_ids/],
      ['binding claims read from the request', (c) => void (c.extraTokenClaims = async (ctx: { oidc: unknown }) => (ctx.oidc ? undefined : undefined)), /extraTokenClaims reads the request context/],
    ];
    // DPoP is on in ours (the first test): the fast path hands over whatever carries a proof or a bound token.
    for (const feature of ['mTLS', 'richAuthorizationRequests', 'attestClientAuth', 'jwtIntrospection']) {
      cases.push([`${feature} on`, (c) => void (c.features = { ...(c.features as object), [feature]: { enabled: true } }), new RegExp(`features\\.${feature}`)]);
    }
    cases.push(['dPoP off', (c) => void (c.features = { ...(c.features as object), dPoP: { enabled: false } }), /features\.dPoP/]);
    cases.push(['dPoP without nonces', (c) => void (c.features = { ...(c.features as object), dPoP: { enabled: true } }), /features\.dPoP/]);
    for (const [what, change, reason] of cases) expect(await fastPathMismatch(ourProviderWith(change), LIBRARY_VERSION), what).toMatch(reason);
  });

  it('hold with DPoP on, as ours has it', async () => {
    expect((resolvedConfiguration(ourProvider())!.features as Record<string, { enabled: boolean }>).dPoP!.enabled).toBe(true);
  });

  it('do not hold on another library version', async () => {
    expect(await fastPathMismatch(resolvedConfiguration(ourProvider()), '9.14.0')).toMatch(/oidc-provider is 9\.14\.0, the fast path mirrors 9\.13\.3/);
  });

  it('the library’s own defaults are not what the fast path needs (a provider without our settings)', async () => {
    const plain = new Provider(ISSUER, { jwks: { keys: [jwk()] }, features: { devInteractions: { enabled: false } } } as Configuration);
    expect(await fastPathMismatch(resolvedConfiguration(plain), LIBRARY_VERSION)).toBeDefined();
  });

  it('switch the fast path off with one warning naming the reason; FAST_PATHS=off does so on purpose', async () => {
    const plain = new Provider(ISSUER, { jwks: { keys: [jwk()] }, features: { devInteractions: { enabled: false } } } as Configuration);
    const mismatch = warnings();
    expect(await fastPathOn(plain, true, mismatch.log as never)).toBe(false);
    expect(mismatch.lines).toHaveLength(1);
    expect(mismatch.lines[0]!.message).toBe('fast path off: every request goes through the app and the provider');
    const off = warnings();
    expect(await fastPathOn(ourProvider(), false, off.log as never)).toBe(false);
    expect(off.lines).toEqual([{ reason: 'FAST_PATHS=off', message: 'fast path off: every request goes through the app and the provider' }]);
  });
});
