// Client ID metadata documents, the pure parts (docs/agents.md): the settings, which URLs may be
// fetched, how long a document is kept, what a document must say.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { documentUrl, isUrlClientId } from '../../src/cimd/client-id.ts';
import { cacheSeconds } from '../../src/cimd/fetch.ts';
import { readDocument } from '../../src/cimd/document.ts';

const PRODUCTION = { NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32) };

describe('settings', () => {
  it('CIMD_ENABLED: on by default, off by default in production, and either way when set', () => {
    expect(loadConfig({}).cimd).toEqual({ enabled: true, allowLoopback: false, maxUsers: 100, fetchLimits: { perAddressPerMinute: 10, perAddressPerHour: 60, perSitePerMinute: 30 } });
    expect(loadConfig({ RATE_LIMITS: 'off' }).cimd.fetchLimits).toBeUndefined();
    expect(loadConfig({ CIMD_FETCHES_PER_SITE_PER_MINUTE: '5' }).cimd.fetchLimits?.perSitePerMinute).toBe(5);
    expect(() => loadConfig({ CIMD_FETCHES_PER_ADDRESS_PER_MINUTE: '0' })).toThrow(/CIMD_FETCHES_PER_ADDRESS_PER_MINUTE must be a positive integer/);
    expect(loadConfig(PRODUCTION).cimd.enabled).toBe(false);
    expect(loadConfig({ ...PRODUCTION, CIMD_ENABLED: 'true' }).cimd.enabled).toBe(true);
    expect(loadConfig({ CIMD_ENABLED: 'false' }).cimd.enabled).toBe(false);
    expect(() => loadConfig({ CIMD_ENABLED: 'maybe' })).toThrow(/CIMD_ENABLED must be true or false/);
  });

  it('CIMD_ALLOW_LOOPBACK=true is refused in production, like WEBHOOK_ALLOW_LOOPBACK', () => {
    expect(loadConfig({ CIMD_ALLOW_LOOPBACK: 'true' }).cimd.allowLoopback).toBe(true);
    expect(() => loadConfig({ ...PRODUCTION, CIMD_ALLOW_LOOPBACK: 'true' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...PRODUCTION, CIMD_ALLOW_LOOPBACK: 'true' })).toThrow(/CIMD_ALLOW_LOOPBACK=true is for development only/);
  });

  it('CIMD_MAX_USERS is a positive count; DYNAMIC_REGISTRATION is off or open', () => {
    expect(loadConfig({ CIMD_MAX_USERS: '5' }).cimd.maxUsers).toBe(5);
    expect(() => loadConfig({ CIMD_MAX_USERS: '0' })).toThrow(/CIMD_MAX_USERS/);
    expect(loadConfig({}).dynamicRegistration).toBe(false);
    expect(loadConfig({ DYNAMIC_REGISTRATION: 'open' }).dynamicRegistration).toBe(true);
    expect(() => loadConfig({ DYNAMIC_REGISTRATION: 'yes' })).toThrow(/DYNAMIC_REGISTRATION must be off or open/);
  });
});

describe('which client_ids are document URLs, and which may be fetched', () => {
  const rule = { allowLoopback: false };
  it('only URLs are document client_ids; registry ids are not', () => {
    expect(isUrlClientId('https://agent.example/client.json')).toBe(true);
    expect(isUrlClientId('85302d7b9cd65620310d00960d40fe2f')).toBe(false);
    expect(isUrlClientId(undefined)).toBe(false);
  });

  it.each([
    ['http://agent.example/c.json', /must use https/],
    ['http://127.0.0.1:8080/c.json', /must use https/],
    ['https://agent.example', /must have a path/],
    ['https://agent.example/', /must have a path/],
    ['https://user:pw@agent.example/c.json', /user name or password/],
    ['https://agent.example/c.json?x=1', /must not have a query/],
    ['https://agent.example/c.json#x', /fragment/],
    ['https://agent.example/a/../c.json', /\. or \.\. segments/],
    ['https://agent.example/a/%2e%2e/c.json', /\. or \.\. segments/],
    ['https://AGENT.example/c.json', /normal form/],
    ['https://agent.example:443/c.json', /normal form/],
    ['https://agent.example/c json', /spaces/],
    [`https://agent.example/${'a'.repeat(2000)}`, /longer than 2000/],
  ])('%s is refused', (id, reason) => {
    expect(() => documentUrl(id, rule)).toThrow(reason);
  });

  it('https documents, and http on 127.0.0.1 only with CIMD_ALLOW_LOOPBACK', () => {
    expect(documentUrl('https://agent.example/c.json', rule).host).toBe('agent.example');
    expect(documentUrl('http://127.0.0.1:8080/c.json', { allowLoopback: true }).port).toBe('8080');
    expect(() => documentUrl('http://localhost:8080/c.json', { allowLoopback: true })).toThrow(/must use https/);
  });
});

describe('how long a document is kept: its caching headers, within 60 seconds and a day', () => {
  it.each([
    [{}, 60],
    [{ 'cache-control': 'max-age=300' }, 300],
    [{ 'cache-control': 'public, max-age=5' }, 60],
    [{ 'cache-control': 'no-store' }, 60],
    [{ 'cache-control': 'max-age=999999' }, 86_400],
    [{ expires: new Date(Date.now() + 600_000).toUTCString() }, 599],
  ])('%j → %i s', (headers, seconds) => {
    expect(Math.abs(cacheSeconds(headers) - seconds)).toBeLessThanOrEqual(1);
  });
});

describe('what a document must say', () => {
  const id = 'https://agent.example/c.json';
  const ok = { client_id: id, client_name: 'Agent', redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'none', scope: 'PROFILE_READ NOT_A_SCOPE ORG_BOOKING_READ' };
  it('a public client with exact redirect URIs; unknown scopes ignored', () => {
    expect(readDocument(JSON.stringify(ok), id)).toEqual({ clientId: id, name: 'Agent', redirectUris: ['https://agent.example/cb'], authMethod: 'none', scopes: ['PROFILE_READ', 'ORG_BOOKING_READ'], links: { policyUri: null, tosUri: null }, requirePar: false, requireDpop: false });
  });
  it('require_pushed_authorization_requests held as stated (docs/par.md)', () => {
    expect(readDocument(JSON.stringify({ ...ok, require_pushed_authorization_requests: true }), id).requirePar).toBe(true);
    expect(readDocument(JSON.stringify({ ...ok, require_pushed_authorization_requests: false }), id).requirePar).toBe(false);
    expect(readDocument(JSON.stringify({ ...ok, dpop_bound_access_tokens: true }), id).requireDpop).toBe(true);
  });
  it('its links: an https policy_uri and tos_uri kept; one that is not usable as a link dropped, the document still used', () => {
    expect(readDocument(JSON.stringify({ ...ok, policy_uri: 'https://agent.example/privacy', tos_uri: 'javascript:alert(1)' }), id).links).toEqual({ policyUri: 'https://agent.example/privacy', tosUri: null });
  });
  it('private_key_jwt with an https jwks_uri', () => {
    expect(readDocument(JSON.stringify({ ...ok, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'https://agent.example/jwks' }), id)).toMatchObject({ authMethod: 'private_key_jwt', jwksUri: 'https://agent.example/jwks' });
  });
  it.each([
    [{ ...ok, client_id: 'https://agent.example/other.json' }, /another client_id/],
    [{ ...ok, redirect_uris: [] }, /must list its redirect_uris/],
    [{ ...ok, redirect_uris: 'https://agent.example/cb' }, /must list its redirect_uris/],
    [{ ...ok, redirect_uris: ['http://agent.example/cb'] }, /must use https/],
    [{ ...ok, redirect_uris: ['https://agent.example/*'] }, /not a wildcard/],
    [{ ...ok, token_endpoint_auth_method: undefined }, /token_endpoint_auth_method/],
    [{ ...ok, token_endpoint_auth_method: 'client_secret_post' }, /token_endpoint_auth_method/],
    [{ ...ok, client_secret: 'x' }, /client_secret/],
    [{ ...ok, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://agent.example/jwks' }, /https jwks_uri/],
    [[ok], /not a JSON object/],
    [{ ...ok, require_pushed_authorization_requests: 'yes' }, /require_pushed_authorization_requests true or false/],
  ])('refused: %j', (doc, reason) => {
    expect(() => readDocument(JSON.stringify(doc), id)).toThrow(reason);
  });
});
