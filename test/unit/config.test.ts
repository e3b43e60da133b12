// Configuration: defaults, validation, and production's refusal of development defaults.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

describe('configuration', () => {
  it('defaults to the embedded database on localhost:3000', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      appUrl: 'http://localhost:3000',
      baseUrl: 'http://localhost:3000',
      issuer: 'http://localhost:3000/v2/auth/oauth2',
      databaseUrl: undefined,
      redis: undefined,
      usingDevCookieKeys: true,
    });
    expect(config.dataDir).toMatch(/\.data$/);
  });

  it('derives the issuer from BASE_URL and keeps APP_URL apart', () => {
    const config = loadConfig({ APP_URL: 'https://app.example.com/', BASE_URL: 'https://api.example.com', COOKIE_KEYS: 'a,b' });
    expect(config.appUrl).toBe('https://app.example.com');
    expect(config.issuer).toBe('https://api.example.com/v2/auth/oauth2');
    expect(config.cookieKeys).toEqual(['a', 'b']);
  });

  it('refuses malformed values with a message naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ APP_URL: 'not a url' })).toThrow(/APP_URL/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL/);
    expect(() => loadConfig({ REDIS_URL: 'http://x' })).toThrow(/REDIS_URL/);
  });

  it('refuses development defaults in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(ConfigError);
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/DATABASE_URL.*COOKIE_KEYS/);
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x' })).toThrow(/COOKIE_KEYS/);
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'short', DATA_ENCRYPTION_KEYS: 'd'.repeat(32) })).toThrow(/COOKIE_KEYS entry must be at least 32 characters/);
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32) })).toThrow(/DATA_ENCRYPTION_KEYS/);
    expect(() => loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'short' })).toThrow(/DATA_ENCRYPTION_KEYS entry must be at least 32/);
    const ok = loadConfig({ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: `${'d'.repeat(32)}, ${'o'.repeat(32)}` });
    expect(ok.usingDevCookieKeys).toBe(false);
    expect(ok.usingDevDataKeys).toBe(false);
    expect(ok.dataEncryptionKeys).toEqual(['d'.repeat(32), 'o'.repeat(32)]);
    expect(loadConfig({}).usingDevDataKeys).toBe(true);
    // Webhooks to this machine: an explicit development setting, refused in production.
    expect(loadConfig({}).webhookAllowLoopback).toBe(false);
    expect(loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'true' }).webhookAllowLoopback).toBe(true);
    expect(() => loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'yes' })).toThrow(/WEBHOOK_ALLOW_LOOPBACK must be true or false/);
    expect(() => loadConfig({ ...{ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32) }, WEBHOOK_ALLOW_LOOPBACK: 'true' })).toThrow(/development only/);
    // Resource URIs on this machine: a setting of their own (src/http/loopback.ts), not the webhooks'.
    expect(loadConfig({}).resourceUriAllowLoopback).toBe(false);
    expect(loadConfig({ WEBHOOK_ALLOW_LOOPBACK: 'true' }).resourceUriAllowLoopback).toBe(false);
    expect(loadConfig({ RESOURCE_URI_ALLOW_LOOPBACK: 'true' }).resourceUriAllowLoopback).toBe(true);
    expect(() => loadConfig({ RESOURCE_URI_ALLOW_LOOPBACK: 'yes' })).toThrow(/RESOURCE_URI_ALLOW_LOOPBACK must be true or false/);
    expect(() => loadConfig({ ...{ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32) }, RESOURCE_URI_ALLOW_LOOPBACK: 'true' })).toThrow(/RESOURCE_URI_ALLOW_LOOPBACK=true is for development only/);
  });


  it('reads the upstream provider: none by default; its client required; openid always asked; passwords off only with it', () => {
    expect(loadConfig({}).upstream).toBeUndefined();
    expect(loadConfig({}).localPasswords).toBe(true);
    const upstream = { UPSTREAM_ISSUER: 'https://id.example.com', UPSTREAM_CLIENT_ID: 'c', UPSTREAM_CLIENT_SECRET: 's' };
    expect(loadConfig({ ...upstream, UPSTREAM_SCOPES: 'email openid' }).upstream).toMatchObject({ name: 'id.example.com', scopes: 'openid email', linking: 'existing', emailClaim: 'email' });
    expect(() => loadConfig({ UPSTREAM_ISSUER: 'https://id.example.com' })).toThrow(/needs UPSTREAM_CLIENT_ID/);
    expect(() => loadConfig({ UPSTREAM_ISSUER: 'https://id.example.com', UPSTREAM_CLIENT_ID: 'c' })).toThrow(/needs UPSTREAM_CLIENT_SECRET/);
    expect(loadConfig(upstream).upstream!.clientAuth).toEqual({ method: 'client_secret_basic', secret: 's' });
    const keyAuth = { UPSTREAM_ISSUER: 'https://id.example.com', UPSTREAM_CLIENT_ID: 'c', UPSTREAM_CLIENT_AUTH: 'private_key_jwt' };
    expect(() => loadConfig(keyAuth)).toThrow(/needs UPSTREAM_PRIVATE_KEY/);
    // A malformed or public key is refused without the value in the message (it is a secret).
    expect(() => loadConfig({ ...keyAuth, UPSTREAM_PRIVATE_KEY: '{not json secret-ish' })).toThrow(/^UPSTREAM_PRIVATE_KEY must be a private JWK in JSON \(one line\)$/);
    expect(() => loadConfig({ ...keyAuth, UPSTREAM_PRIVATE_KEY: JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }) })).toThrow(/with its private part/);
    expect(loadConfig({ ...keyAuth, UPSTREAM_PRIVATE_KEY: JSON.stringify({ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'c', kid: 'k' }) }).upstream!.clientAuth).toMatchObject({ method: 'private_key_jwt', jwk: { kid: 'k' } });
    expect(() => loadConfig({ ...upstream, UPSTREAM_LINKING: 'email' })).toThrow(/UPSTREAM_LINKING must be one of existing, create/);
    expect(() => loadConfig({ LOCAL_PASSWORDS: 'off' })).toThrow(/LOCAL_PASSWORDS=off needs UPSTREAM_ISSUER/);
    expect(loadConfig({ ...upstream, LOCAL_PASSWORDS: 'off' }).localPasswords).toBe(false);
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32) };
    expect(() => loadConfig({ ...production, ...upstream, UPSTREAM_ALLOW_LOOPBACK: 'true' })).toThrow(/UPSTREAM_ALLOW_LOOPBACK=true is for development only/);
  });

  it('reads the metrics listener: none by default, on HOST unless METRICS_HOST', () => {
    expect(loadConfig({ HOST: '0.0.0.0' })).toMatchObject({ metricsPort: undefined, metricsHost: '0.0.0.0' });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5' })).toMatchObject({ metricsPort: 9464, metricsHost: '10.0.0.5' });
    expect(loadConfig({ METRICS_PORT: '0' }).metricsPort).toBe(0);
    for (const bad of ['x', '-1', '65536', '1.5']) expect(() => loadConfig({ METRICS_PORT: bad })).toThrow(/^METRICS_PORT must be an integer from 0 to 65535/);
    expect(() => loadConfig({ PORT: '3000', METRICS_PORT: '3000' })).toThrow(/METRICS_PORT must differ from PORT/);
    expect(loadConfig({ PORT: '3000', METRICS_PORT: '3000', METRICS_HOST: '10.0.0.5' }).metricsPort).toBe(3000);
  });

  it('refuses malformed rate limit settings', () => {
    expect(() => loadConfig({ RATE_LIMITS: 'maybe' })).toThrow(/RATE_LIMITS/);
    expect(() => loadConfig({ RATE_LIMIT_AUTH_FAILURES: '0' })).toThrow(/RATE_LIMIT_AUTH_FAILURES/);
    expect(loadConfig({ RATE_LIMITS: 'off' }).rateLimits.enabled).toBe(false);
    // The old lockout's settings are refused with a reason, not silently ignored.
    expect(() => loadConfig({ RATE_LIMIT_AUTH_LOCKOUT_SECONDS: '900' })).toThrow(/no lockout any more/);
    expect(() => loadConfig({ RATE_LIMIT_TOKEN_PER_MINUTE_PER_IP: '600' })).toThrow(/no longer supported/);
    expect(loadConfig({}).rateLimits.tokenPerMinutePerClient).toBeGreaterThanOrEqual(4000);
  });
});
