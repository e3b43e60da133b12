// Keys instead of shared secrets (issue 49 item 4; RFC 7523 private_key_jwt; docs/private-key-jwt.md):
// a registry client registers a jwks_uri or a key set (clients set-keys, the developer page) and
// then authenticates with signed assertions at the token, introspection and revocation endpoints,
// with no secret at all. Over real HTTP on both stores, with a second instance sharing them (an
// assertion's jti is used once across instances), and a jwks_uri served on the loopback
// (CIMD_ALLOW_LOOPBACK=true, as the metadata documents' tests) where keys are rotated.
import { createHmac, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { developerPages } from './support/developer-pages.ts';
import { anotherInstance, startTestServer, type AppInstance, type Storage, type TestServer } from './support/server.ts';
import { approvedClient, codeFor, newUser, operator, REDIRECT, type TestClient } from './support/fixtures.ts';
import { startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { admin, spawnAdmin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import type { TestUser } from './support/oauth.ts';
import { clientsSetKeys, secretsGenerate } from '../src/admin/commands.ts';
import { CLIENT_AUTH_ALGS } from '../src/oauth/client-keys.ts';

const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const TOKEN = '/v2/auth/oauth2/token';
const INTROSPECT = '/v2/auth/oauth2/introspect';
const REVOKE = '/v2/auth/oauth2/revoke';
// Refused assertions count as failed authentications (src/oauth/rate-limits.ts): this file makes many.
const ENV = { CIMD_ALLOW_LOOPBACK: 'true', RATE_LIMIT_AUTH_FAILURES: '1000', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' };

interface Key {
  kid: string;
  privateKey: KeyObject;
  /** The public key as a JWK, as registered. */
  jwk: Record<string, unknown>;
  /** The private key as a JWK (for the refusals of private parts). */
  privateJwk: Record<string, unknown>;
}

function newKey(kid: string = randomUUID()): Key {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'ES256', use: 'sig' }, privateJwk: { ...privateKey.export({ format: 'jwk' }), kid } };
}
const jwksOf = (...keys: Key[]) => ({ keys: keys.map((k) => k.jwk) });
const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A client assertion (RFC 7523 3) signed by `key`; `claims` and `header` add or replace fields. */
function assertion(key: Key, clientId: string, aud: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'ES256', typ: 'JWT', kid: key.kid, ...header })}.${part({ iss: clientId, sub: clientId, aud, jti: randomUUID(), iat: now, exp: now + 60, ...claims })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

function unsignedAssertion(clientId: string, aud: string): string {
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: clientId, sub: clientId, aud, jti: randomUUID(), exp: now + 60 })}.`;
}

/** Signed with a shared secret (HS256): what private_key_jwt never accepts. */
function hmacAssertion(secret: string, clientId: string, aud: string): string {
  const now = Math.floor(Date.now() / 1000);
  const input = `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ iss: clientId, sub: clientId, aud, jti: randomUUID(), exp: now + 60 })}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

interface Answer {
  status: number;
  body: Record<string, any>;
}

async function post(base: string, path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(fields).toString() });
  const text = await res.text();
  let body: Record<string, any> = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch {
    body = { text };
  }
  return { status: res.status, body };
}

const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` });
const withAssertion = (jwt: string) => ({ client_assertion_type: ASSERTION_TYPE, client_assertion: jwt });

describe.each<Storage>(['redis', 'sql'])('private_key_jwt for registry clients (%s)', (storage) => {
  let server: TestServer;
  let other: AppInstance;
  let docs: DocumentServer;
  let user: Awaited<ReturnType<typeof newUser>>;
  let issuer: string;
  let tokenEndpoint: string;
  let adminEnv: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'pkjwt-'));

  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer(storage, ENV), startDocumentServer()]);
    other = await anotherInstance(server, ENV);
    user = await newUser(server);
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, any>;
    issuer = metadata.issuer;
    tokenEndpoint = metadata.token_endpoint;
    adminEnv = { DATABASE_URL: server.pg.url, CIMD_ALLOW_LOOPBACK: 'true', ...(server.redis ? { REDIS_URL: server.redis.url } : {}) };
  });
  afterAll(async () => {
    await other?.close();
    await Promise.all([server?.close(), docs?.close()]);
  });

  /** A code of `app` for the test user, through sign-in and Allow. */
  const code = (clientId: string) => codeFor(server, { client_id: clientId, client_secret: '' }, user, 'PROFILE_READ');
  const stored = async (id: string) => server.pg.db('oauth_clients').where('id', id).first('jwks_uri', 'jwks');
  const keysJson = (file: string, value: unknown) => {
    const path = join(dir, file);
    writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
    return path;
  };

  it('advertises private_key_jwt, with asymmetric algorithms only', async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server/v2/auth/oauth2`)).json()) as Record<string, any>;
    expect(metadata.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(metadata.token_endpoint_auth_signing_alg_values_supported).toEqual([...CLIENT_AUTH_ALGS]);
    expect((metadata.token_endpoint_auth_signing_alg_values_supported as string[]).some((alg) => alg.startsWith('HS') || alg === 'none')).toBe(false);
  });

  it('clients set-keys --jwks-uri: the secret is revoked and refused; code exchange, refresh (on the other instance), introspection and revocation with assertions', async () => {
    const app = await approvedClient(server, ['PROFILE_READ'], 'Keyed App');
    const key = newKey();
    const jwksUri = docs.serve(`/keys-${app.client_id}.json`, { body: jwksOf(key) });
    const set = await admin(['--json', 'clients', 'set-keys', app.client_id, '--jwks-uri', jwksUri], adminEnv);
    expect(set.code, set.stderr).toBe(0);
    const shown = JSON.parse(set.stdout);
    expect(shown).toMatchObject({ client_id: app.client_id, token_endpoint_auth_method: 'private_key_jwt', jwks_uri: jwksUri, revoked_secret_ids: [expect.any(Number)] });
    expect(JSON.parse((await admin(['--json', 'secrets', 'list', app.client_id], adminEnv)).stdout)).toEqual({ secrets: [] });
    expect(await stored(app.client_id)).toEqual({ jwks_uri: jwksUri, jwks: null });

    // The code exchange with an assertion; the old secret no longer works.
    const exchanged = await post(server.url, TOKEN, { grant_type: 'authorization_code', code: await code(app.client_id), redirect_uri: REDIRECT, ...withAssertion(assertion(key, app.client_id, tokenEndpoint)) });
    expect(exchanged.status, JSON.stringify(exchanged.body)).toBe(200);
    const { access_token: access, refresh_token: refresh } = exchanged.body;
    for (const at of [server.url, other.url]) {
      const bySecret = await post(at, TOKEN, { grant_type: 'refresh_token', refresh_token: refresh }, basic(app.client_id, app.client_secret));
      expect(bySecret.status, JSON.stringify(bySecret.body)).toBe(401);
      expect(bySecret.body.error).toBe('invalid_client');
      const posted = await post(at, INTROSPECT, { token: access, client_id: app.client_id, client_secret: app.client_secret });
      expect(posted.status).toBe(401);
    }

    // The refresh on the other instance (which fetches the keys itself), then introspection and revocation.
    const refreshed = await post(other.url, TOKEN, { grant_type: 'refresh_token', refresh_token: refresh, ...withAssertion(assertion(key, app.client_id, issuer)) });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const introspected = await post(server.url, INTROSPECT, { token: refreshed.body.access_token, ...withAssertion(assertion(key, app.client_id, `${server.url}${INTROSPECT}`)) });
    expect(introspected.status, JSON.stringify(introspected.body)).toBe(200);
    expect(introspected.body).toMatchObject({ active: true, client_id: app.client_id });
    const revoked = await post(other.url, REVOKE, { token: refreshed.body.refresh_token, ...withAssertion(assertion(key, app.client_id, issuer)) });
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    const afterRevoke = await post(server.url, TOKEN, { grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token, ...withAssertion(assertion(key, app.client_id, issuer)) });
    expect(afterRevoke.status).toBe(400);
    expect(afterRevoke.body.error).toBe('invalid_grant');

    // No secret may be made while it has keys; --none takes it back to a secret, which then works.
    await expect(secretsGenerate(operator(server), app.client_id, {})).rejects.toThrow(/authenticates with its keys.*set-keys ID --none/);
    const none = await admin(['--json', 'clients', 'set-keys', app.client_id, '--none'], adminEnv);
    expect(none.code, none.stderr).toBe(0);
    expect(JSON.parse(none.stdout)).toMatchObject({ token_endpoint_auth_method: 'client_secret_basic' });
    expect(JSON.parse(none.stdout).jwks_uri).toBeUndefined();
    const secret = await secretsGenerate(operator(server), app.client_id, {});
    const again = await post(server.url, TOKEN, { grant_type: 'authorization_code', code: await code(app.client_id), redirect_uri: REDIRECT }, basic(app.client_id, secret.client_secret));
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const byKey = await post(server.url, TOKEN, { grant_type: 'refresh_token', refresh_token: again.body.refresh_token, ...withAssertion(assertion(key, app.client_id, tokenEndpoint)) });
    expect(byKey.status).toBe(401);
  });

  it('clients create --auth private_key_jwt --jwks FILE: no secret is ever issued; the inline keys authenticate', async () => {
    const key = newKey();
    const created = await admin(['--json', 'clients', 'create', '--name', 'Born Keyed', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--auth', 'private_key_jwt', '--jwks', keysJson('born.json', jwksOf(key))], adminEnv);
    expect(created.code, created.stderr).toBe(0);
    const client = JSON.parse(created.stdout);
    expect(client).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks: jwksOf(key) });
    expect(client.client_secret).toBeUndefined();
    expect(client.secret_id).toBeUndefined();
    expect((await admin(['--json', 'clients', 'approve', client.client_id], adminEnv)).code).toBe(0);
    expect(Number((await server.pg.db('oauth_client_secrets').where('client_id', client.client_id).count('* as n').first())!.n)).toBe(0);
    const res = await post(other.url, TOKEN, { grant_type: 'authorization_code', code: await code(client.client_id), redirect_uri: REDIRECT, ...withAssertion(assertion(key, client.client_id, issuer)) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // Standard input too (`--jwks -`), read by the script as a process of its own reads it.
    const piped = newKey();
    const fromStdin = await spawnAdmin(['--json', 'clients', 'set-keys', client.client_id, '--jwks', '-'], adminEnv, JSON.stringify(jwksOf(piped), null, 2));
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(JSON.parse(fromStdin.stdout)).toMatchObject({ jwks: jwksOf(piped) });
    expect(await stored(client.client_id)).toMatchObject({ jwks: jwksOf(piped) });
  });

  it('bad keys are refused with words, at set-keys and create, and change nothing', async () => {
    const app = await approvedClient(server, ['PROFILE_READ'], 'Careful App');
    const key = newKey();
    const { kty, crv, x, y } = key.jwk as Record<string, string>;
    const cases: Array<[string[], RegExp]> = [
      [['--jwks', keysJson('private.json', { keys: [key.privateJwk] })], /key 1 holds private key material \(d\): register only the public key/],
      [['--jwks', keysJson('oct.json', { keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 's' }] })], /kty "oct".*never a symmetric key/],
      [['--jwks', keysJson('hs.json', { keys: [{ kty, crv, x, y, alg: 'HS256' }] })], /names the algorithm "HS256"/],
      [['--jwks', keysJson('none-alg.json', { keys: [{ kty, crv, x, y, alg: 'none' }] })], /names the algorithm "none"/],
      [['--jwks', keysJson('enc.json', { keys: [{ kty, crv, x, y, use: 'enc' }] })], /use "sig"/],
      [['--jwks', keysJson('broken.json', { keys: [{ kty, crv, x: 'AAAA', y }] })], /key 1 is not a valid public key/],
      [['--jwks', keysJson('small-rsa.json', { keys: [generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' })] })], /RSA key of 1024 bits: at least 2048/],
      [['--jwks', keysJson('empty.json', { keys: [] })], /holds no keys/],
      [['--jwks', keysJson('many.json', { keys: Array.from({ length: 11 }, () => newKey().jwk) })], /at most 10 keys/],
      [['--jwks', keysJson('dupe.json', { keys: [key.jwk, { ...newKey().jwk, kid: key.kid }] })], /two keys have the kid/],
      [['--jwks', keysJson('text.json', 'not json')], /not JSON/],
      [['--jwks', keysJson('array.json', [key.jwk])], /a JSON object with a "keys" list/],
      [['--jwks', join(dir, 'missing.json')], /the file cannot be read \(ENOENT\)/],
      [['--jwks-uri', 'http://keys.example.com/jwks.json'], /must use https/],
      [['--jwks-uri', 'not a url'], /absolute URL/],
      [['--jwks-uri', 'https://user:pw@keys.example.com/jwks.json'], /credentials/],
      [['--jwks-uri', `https://keys.example.com/${'a'.repeat(2000)}`], /at most 2000 characters/],
      [['--jwks-uri', 'https://keys.example.com/jwks.json', '--none'], /exactly one of/],
      [[], /exactly one of/],
    ];
    for (const [args, reason] of cases) {
      expectRefusal(await admin(['--json', 'clients', 'set-keys', app.client_id, ...args], adminEnv), reason);
      expect(await stored(app.client_id), args.join(' ')).toEqual({ jwks_uri: null, jwks: null });
    }
    // A jwks_uri is fetched when it is set, under the provider's rules, and its keys judged.
    const published: Array<[string, unknown, RegExp]> = [
      ['/unpublished.json', undefined, /the jwks_uri cannot be fetched: it answered with status 404 \(publish the keys there first\)/],
      ['/published-private.json', { keys: [key.privateJwk] }, /the keys published at the jwks_uri: key 1 holds private key material/],
      ['/published-oct.json', { keys: [key.jwk, { kty: 'oct', k: 'c2VjcmV0' }] }, /the keys published at the jwks_uri: key 2 is a shared secret/],
      ['/published-enc-only.json', { keys: [{ ...key.jwk, use: 'enc', alg: undefined }] }, /none of its keys is a public signing key/],
      ['/published-junk.json', 'not json', /the keys published at the jwks_uri: the key set is not JSON/],
    ];
    published.push(['https://10.0.0.1/jwks.json', undefined, /the jwks_uri cannot be fetched: .*public addresses only/], ['https://169.254.169.254/jwks.json', undefined, /the jwks_uri cannot be fetched: .*public addresses only/]);
    for (const [path, body, reason] of published) {
      const uri = path.startsWith('https:') ? path : body === undefined ? `${docs.url}${path}` : docs.serve(path, { body });
      expectRefusal(await admin(['--json', 'clients', 'set-keys', app.client_id, '--jwks-uri', uri], adminEnv), reason);
      expect(await stored(app.client_id), path).toEqual({ jwks_uri: null, jwks: null });
    }
    // Refused by the other loopback rule: http on 127.0.0.1 only with CIMD_ALLOW_LOOPBACK=true.
    expectRefusal(await admin(['--json', 'clients', 'set-keys', app.client_id, '--jwks-uri', `${docs.url}/keys.json`], { ...adminEnv, CIMD_ALLOW_LOOPBACK: 'false' }), /must use https/);
    expectRefusal(await admin(['--json', 'clients', 'set-keys', app.client_id, '--none'], adminEnv), /no keys to remove/);
    expect(Number((await server.pg.db('oauth_client_secrets').where('client_id', app.client_id).whereNull('revoked_at').count('* as n').first())!.n)).toBe(1);
    // A public client has nothing to authenticate with; create refuses the mix of options.
    const pub = JSON.parse((await admin(['--json', 'clients', 'create', '--name', 'Public', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--public'], adminEnv)).stdout);
    expectRefusal(await admin(['--json', 'clients', 'set-keys', pub.client_id, '--jwks', keysJson('pub.json', jwksOf(key))], adminEnv), /public client does not authenticate/);
    expectRefusal(await admin(['--json', 'clients', 'create', '--name', 'X', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--auth', 'private_key_jwt'], adminEnv), /give a jwks_uri .* or a key set/);
    expectRefusal(await admin(['--json', 'clients', 'create', '--name', 'X', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--jwks-uri', 'https://keys.example.com/j'], adminEnv), /go with --auth private_key_jwt/);
    expectRefusal(await admin(['--json', 'clients', 'create', '--name', 'X', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--auth', 'client_secret_jwt'], adminEnv), /--auth must be client_secret_basic .* or private_key_jwt/);
    expectRefusal(await admin(['--json', 'clients', 'create', '--name', 'X', '--redirect-uri', REDIRECT, '--scope', 'PROFILE_READ', '--public', '--auth', 'private_key_jwt', '--jwks-uri', 'https://keys.example.com/j'], adminEnv), /public client does not authenticate/);
    expect(await server.pg.db('oauth_clients').where('name', 'X').first()).toBeUndefined();
  });

  it('a resource server with keys introspects with assertions, and has no secret', async () => {
    const key = newKey();
    const app = await approvedClient(server, ['PROFILE_READ'], 'Introspected App');
    const { access_token: token } = (await post(server.url, TOKEN, { grant_type: 'authorization_code', code: await code(app.client_id), redirect_uri: REDIRECT }, basic(app.client_id, app.client_secret))).body;
    const created = await admin(['--json', 'clients', 'create', '--resource-server', '--name', 'Keyed Gateway', '--scope', 'PROFILE_READ', '--auth', 'private_key_jwt', '--jwks-uri', docs.serve('/gateway-keys.json', { body: jwksOf(key) })], adminEnv);
    expect(created.code, created.stderr).toBe(0);
    const gateway = JSON.parse(created.stdout);
    expect(gateway).toMatchObject({ kind: 'resource_server', token_endpoint_auth_method: 'private_key_jwt' });
    expect(gateway.client_secret).toBeUndefined();
    expect((await admin(['--json', 'clients', 'approve', gateway.client_id], adminEnv)).code).toBe(0);
    for (const at of [server.url, other.url]) {
      const answer = await post(at, INTROSPECT, { token, ...withAssertion(assertion(key, gateway.client_id, issuer)) });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ active: true, client_id: app.client_id });
    }
  });

  describe('assertions', () => {
    let app: TestClient;
    let key: Key;

    beforeAll(async () => {
      app = await approvedClient(server, ['PROFILE_READ'], 'Asserting App');
      key = newKey();
      await clientsSetKeys({ ...operator(server), jwksUriAllowLoopback: true }, app.client_id, { jwksUri: docs.serve(`/keys-${app.client_id}.json`, { body: jwksOf(key) }) });
    });

    const introspect = (jwt: string, at = server.url) => post(at, INTROSPECT, { token: 'at_nothing', ...withAssertion(jwt) });

    it('each assertion is used once, across instances too, and a replayed one spends nothing', async () => {
      const once = assertion(key, app.client_id, issuer);
      expect((await introspect(once)).status).toBe(200);
      for (const at of [server.url, other.url]) {
        const replayed = await introspect(once, at);
        expect(replayed.status, at).toBe(401);
        expect(replayed.body.error).toBe('invalid_client');
      }
      // At the token endpoint: the refresh with a replayed assertion is refused before the token is spent.
      const issued = await post(server.url, TOKEN, { grant_type: 'authorization_code', code: await code(app.client_id), redirect_uri: REDIRECT, ...withAssertion(assertion(key, app.client_id, issuer)) });
      expect(issued.status, JSON.stringify(issued.body)).toBe(200);
      const used = assertion(key, app.client_id, issuer);
      expect((await introspect(used, other.url)).status).toBe(200);
      const refused = await post(server.url, TOKEN, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, ...withAssertion(used) });
      expect(refused.status).toBe(401);
      const refreshed = await post(other.url, TOKEN, { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token, ...withAssertion(assertion(key, app.client_id, issuer)) });
      expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    });

    it('refused: another audience, expired, living too long, alg none, HS256, another key, no jti, another issuer — never a 500', async () => {
      const now = Math.floor(Date.now() / 1000);
      const stranger = newKey(key.kid);
      const refusals: Array<[string, string]> = [
        ['another audience', assertion(key, app.client_id, 'https://other.example/token')],
        ['another endpoint of ours', assertion(key, app.client_id, `${server.url}/v2/me`)],
        ['expired', assertion(key, app.client_id, issuer, { iat: now - 600, exp: now - 60 })],
        ['living too long', assertion(key, app.client_id, issuer, { exp: now + 3600 })],
        ['no exp', assertion(key, app.client_id, issuer, { exp: undefined })],
        ['alg none', unsignedAssertion(app.client_id, issuer)],
        ['HS256 with the old secret', hmacAssertion(app.client_secret, app.client_id, issuer)],
        ['another key with its kid', assertion(stranger, app.client_id, issuer)],
        ['an unknown kid', assertion(newKey(), app.client_id, issuer)],
        ['no jti', assertion(key, app.client_id, issuer, { jti: undefined })],
        ['another issuer', assertion(key, app.client_id, issuer, { iss: 'someone-else' })],
        ['alg ES256 claimed over an RS256 signature', assertion(key, app.client_id, issuer, {}, { alg: 'RS256' })],
      ];
      for (const [what, jwt] of refusals) {
        for (const at of [server.url, other.url]) {
          const answer = await introspect(jwt, at);
          expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(401);
          expect(answer.body.error, what).toBe('invalid_client');
        }
      }
      // Malformed: refused as a bad request, never a 500.
      for (const junk of ['abc', 'a.b.c', `${part({ alg: 'ES256' })}.${part({ sub: app.client_id })}.`, '.'.repeat(3), 'x'.repeat(20_000)]) {
        const answer = await introspect(junk);
        expect(answer.status, junk.slice(0, 40)).toBeGreaterThanOrEqual(400);
        expect(answer.status, junk.slice(0, 40)).toBeLessThan(500);
      }
      const mixed = await post(server.url, INTROSPECT, { token: 'x', ...withAssertion(assertion(key, app.client_id, issuer)) }, basic(app.client_id, app.client_secret));
      expect(mixed.status).toBeGreaterThanOrEqual(400);
      expect(mixed.status).toBeLessThan(500);
      const wrongType = await post(server.url, INTROSPECT, { token: 'x', client_assertion_type: 'urn:example', client_assertion: assertion(key, app.client_id, issuer) });
      expect(wrongType.status).toBe(400);
      // And the good one still passes.
      expect((await introspect(assertion(key, app.client_id, issuer))).status).toBe(200);
    });
  });

  it('key rotation at the jwks_uri works without a restart: a new key published is used within seconds, a removed one stops working, the jwks_uri down keeps the last keys', async () => {
    const app = await approvedClient(server, ['PROFILE_READ'], 'Rotating App');
    const [a, b] = [newKey('a'), newKey('b')];
    let published = jwksOf(a);
    let status = 200;
    const path = `/keys-${app.client_id}.json`;
    await clientsSetKeys({ ...operator(server), jwksUriAllowLoopback: true }, app.client_id, { jwksUri: docs.serve(path, () => ({ body: published, status })) });
    // Fetched once as it was set (the keys judged); counted from here: the instances' own fetches.
    docs.hits.delete(path);
    const fetches = () => docs.hits.get(path) ?? 0;
    const passes = async (key: Key, at = server.url) => (await post(at, INTROSPECT, { token: 'x', ...withAssertion(assertion(key, app.client_id, issuer)) })).status;
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    try {
      expect(await passes(a)).toBe(200);
      expect(fetches()).toBe(1);
      // The app publishes its next key beside the current one, then signs with it: the unknown kid
      // makes the server fetch the keys again (at most once per JWKS_REFETCH_SECONDS).
      published = jwksOf(a, b);
      vi.setSystemTime(Date.now() + 11_000);
      expect(await passes(b)).toBe(200);
      expect(fetches()).toBe(2);
      expect(await passes(a)).toBe(200);
      // Assertions naming unknown keys cannot make it fetch at their rate.
      for (let i = 0; i < 5; i++) expect(await passes(newKey())).toBe(401);
      expect(fetches()).toBe(2);
      // The old key withdrawn: once the keys' cache time is over (60 s here), it no longer works.
      published = jwksOf(b);
      vi.setSystemTime(Date.now() + 61_000);
      expect(await passes(a)).toBe(401);
      expect(await passes(b)).toBe(200);
      expect(fetches()).toBe(3);
      // The other instance fetches for itself.
      expect(await passes(b, other.url)).toBe(200);
      expect(await passes(a, other.url)).toBe(401);
      expect(fetches()).toBe(4);
      // The jwks_uri failing: the keys each instance fetched last go on working (one failed fetch each).
      status = 500;
      vi.setSystemTime(Date.now() + 61_000);
      expect(await passes(b)).toBe(200);
      expect(await passes(b, other.url)).toBe(200);
      expect(await passes(b)).toBe(200);
      expect(fetches()).toBe(6);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('keys on the developer page (owner only)', () => {
  const BASE = '/settings/developer/oauth-clients';
  let server: TestServer;
  let docs: DocumentServer;
  let dev: TestUser & { id: number };
  let stranger: TestUser & { id: number };

  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer('redis', ENV), startDocumentServer()]);
    [dev, stranger] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Stranger')]);
  });
  afterAll(() => Promise.all([server?.close(), docs?.close()]));

  const { url, signIn, post: send } = developerPages(() => server.url);

  it('the owner registers a key set or a jwks_uri, then removes them; bad input is shown beside the form; others cannot', async () => {
    const browser = await signIn(dev);
    expect((await send(browser, BASE, { name: 'Page Keyed App', kind: 'confidential', redirect_uris: REDIRECT, scope: ['PROFILE_READ'] })).status).toBe(200);
    const id = (await server.pg.db('oauth_clients').where('name', 'Page Keyed App').first('id')).id as string;
    const path = `${BASE}/${id}`;
    const stored = async () => server.pg.db('oauth_clients').where('id', id).first('jwks_uri', 'jwks');
    const activeSecrets = async () => Number((await server.pg.db('oauth_client_secrets').where('client_id', id).whereNull('revoked_at').count('* as n').first())!.n);
    expect((await browser.get(url(path))).$('form.keys').length).toBe(1);
    expect(await activeSecrets()).toBe(1);
    const key = newKey();

    // Refusals: the page again with the reason, nothing changed.
    for (const [fields, reason] of [
      [{ key_source: 'jwks', jwks: JSON.stringify({ keys: [key.privateJwk] }) }, /private key material/],
      [{ key_source: 'jwks', jwks: '{"keys": "no"}' }, /"keys" list/],
      [{ key_source: 'jwks_uri', jwks_uri: 'http://keys.example.com/jwks.json' }, /must use https/],
      [{ key_source: 'other' }, /Choose a jwks_uri or a key set/],
      [{ key_source: 'jwks_uri', jwks_uri: `${docs.url}/not-yet.json` }, /cannot be fetched: it answered with status 404 \(publish the keys there first\)/],
    ] as Array<[Record<string, string>, RegExp]>) {
      const refused = await send(browser, `${path}/keys`, fields);
      expect(refused.status, JSON.stringify(fields)).toBe(400);
      expect(refused.$('#keys-error').text()).toMatch(reason);
      expect(await stored()).toEqual({ jwks_uri: null, jwks: null });
    }

    // Another user: not found, nothing changed; a forged form: refused.
    expect((await send(await signIn(stranger), `${path}/keys`, { key_source: 'jwks', jwks: JSON.stringify(jwksOf(key)) })).status).toBe(404);
    expect((await send(browser, `${path}/keys`, { key_source: 'jwks', jwks: JSON.stringify(jwksOf(key)) }, 'not-the-token')).status).toBe(403);
    expect(await stored()).toEqual({ jwks_uri: null, jwks: null });

    // The key set: saved, the secret revoked, the provider sees private_key_jwt.
    const saved = await send(browser, `${path}/keys`, { key_source: 'jwks', jwks: JSON.stringify(jwksOf(key)) });
    expect(saved.status).toBe(303);
    expect(await stored()).toEqual({ jwks_uri: null, jwks: jwksOf(key) });
    expect(await activeSecrets()).toBe(0);
    const page = await browser.get(url(path));
    expect(page.$('#keys-current').text()).toMatch(/private_key_jwt.*1 key registered/);
    expect(page.$('form[action$="/secrets"]').length).toBe(0);
    const client = await server.system.provider.Client.find(id);
    expect(client?.clientAuthMethod).toBe('private_key_jwt');

    // A jwks_uri instead; then removed: back to a secret (none until one is made).
    const jwksUri = docs.serve('/page-keys.json', { body: jwksOf(key) });
    expect((await send(browser, `${path}/keys`, { key_source: 'jwks_uri', jwks_uri: jwksUri })).status).toBe(303);
    expect(await stored()).toEqual({ jwks_uri: jwksUri, jwks: null });
    expect((await server.system.provider.Client.find(id))?.jwksUri).toBe(jwksUri);
    expect((await send(await signIn(stranger), `${path}/keys/remove`, {})).status).toBe(404);
    expect((await send(browser, `${path}/keys/remove`, {})).status).toBe(303);
    expect(await stored()).toEqual({ jwks_uri: null, jwks: null });
    expect((await server.system.provider.Client.find(id))?.clientAuthMethod).toBe('client_secret_basic');
    expect((await browser.get(url(path))).$('form[action$="/secrets"]').length).toBe(1);
  });
});
