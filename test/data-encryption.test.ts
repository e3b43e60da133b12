// Secrets at rest: the token-signing keys and the webhook signing secrets are stored encrypted
// under DATA_ENCRYPTION_KEYS, so the database alone (a dump) holds no usable private key or
// secret; a key is rotated by putting a new one first, running `admin keys reencrypt`, and then
// dropping the old one. Real PostgreSQL, the real server and the real operator script.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { DELIVERING, startInstance, type AppInstance, type TestServer } from './support/server.ts';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { newUser } from './support/fixtures.ts';
import { admin as runAdmin } from './support/processes.ts';
import { createClient } from '../src/clients/service.ts';
import { clientsSetWebhook } from '../src/admin/commands.ts';
import { sendTestEvent } from '../src/clients/webhook-settings.ts';
import { createDataCipher } from '../src/storage/data-encryption.ts';
import { until } from './support/eventually.ts';

const OLD_KEY = `old-data-key-${randomBytes(16).toString('hex')}`;
const NEW_KEY = `new-data-key-${randomBytes(16).toString('hex')}`;
const ENV = { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', WEBHOOK_RETRY_BASE_SECONDS: '1', WEBHOOK_ALLOW_LOOPBACK: 'true' };

describe('the cipher', () => {
  it('encrypts with the first key, decrypts with any, and names the key in each value', () => {
    const old = createDataCipher([OLD_KEY]);
    const sealed = old.encrypt('whsec_example');
    expect(sealed).toMatch(/^enc1:[0-9a-f]{12}:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain('whsec_example');
    expect(old.encrypt('whsec_example')).not.toBe(sealed); // a fresh IV each time
    const rotating = createDataCipher([NEW_KEY, OLD_KEY]);
    expect(rotating.decrypt(sealed)).toBe('whsec_example');
    expect(rotating.isCurrent(sealed)).toBe(false);
    expect(rotating.isCurrent(rotating.encrypt('x'))).toBe(true);
    expect(() => createDataCipher([NEW_KEY]).decrypt(sealed)).toThrow(/not in DATA_ENCRYPTION_KEYS/);
    // A changed byte fails authentication. The second-to-last character carries six bits of data
    // (the last may carry padding bits); it is replaced by another, never by itself.
    const at = sealed.length - 2;
    const tampered = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    expect(tampered).not.toBe(sealed);
    expect(() => old.decrypt(tampered)).toThrow();
  });
});

describe('secrets at rest', () => {
  let pg: TestDatabase;
  let instance: AppInstance | undefined;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  const app = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => (received.push({ headers: req.headers, body }), res.writeHead(204).end()));
  });
  beforeAll(async () => {
    pg = await createTestDatabase({ migrate: 'bare' });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await instance?.close();
    app.closeAllConnections();
    app.close();
    await pg?.drop();
  });

  const start = (keys: string) => startInstance({ ...ENV, DATABASE_URL: pg.url, DATA_ENCRYPTION_KEYS: keys }, { db: pg.db, ...DELIVERING });
  const kids = async (base: string) => ((await (await fetch(`${base}/v2/auth/oauth2/jwks`)).json()) as { keys: Array<{ kid: string; d?: string }> }).keys;
  const ctxOf = (server: AppInstance) => ({ db: pg.db, artifacts: server.system.artifacts, outbox: server.system.outbox, records: server.system.records, by: { actor: 'operator:test' }, cipher: server.system.cipher, allowLoopback: true });

  /** An event for the client arrives and verifies with the secret the owner was shown. */
  async function delivers(server: AppInstance, clientId: string, secret: string) {
    const before = received.length;
    await sendTestEvent(server.system, clientId, { actor: 'test' });
    await until('the delivery', () => received.length, (n) => n > before);
    const delivery = received.at(-1)!;
    expect(received.length).toBeGreaterThan(before);
    expect(() => new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).not.toThrow();
  }

  it('keeps no usable private key or webhook secret in the database, encrypts plain keys of earlier versions, and rotates the key', async () => {
    // A token-signing key stored in plain text by an earlier version.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const legacy = { ...privateKey.export({ format: 'jwk' }), kid: 'legacy-plain-key', alg: 'RS256', use: 'sig' };
    await pg.db('signing_keys').insert({ kid: legacy.kid, jwk: JSON.stringify(legacy) });

    instance = await start(OLD_KEY);
    expect((await kids(instance.url)).map((k) => k.kid)).toEqual(['legacy-plain-key']);
    expect((await kids(instance.url))[0]!.d).toBeUndefined();
    const user = await newUser({ system: instance.system } as TestServer, 'Owner');
    const { client } = await createClient(instance.system, { name: 'Encrypted App', kind: 'confidential', legacy: false, scopes: ['PROFILE_READ'], redirectUris: ['https://app.example.com/cb'], ownerUserId: user.id }, { actor: 'test' });
    const { signing_secret: secret } = await clientsSetWebhook(ctxOf(instance), client.clientId, `http://127.0.0.1:${(app.address() as AddressInfo).port}/hooks`);
    expect(secret).toMatch(/^whsec_/);

    // What a dump of the database holds: no JWK private member, no webhook secret.
    const dump = JSON.stringify({ keys: await pg.db('signing_keys'), secrets: await pg.db('webhook_secrets') });
    expect(dump).not.toContain(legacy.d);
    expect(dump).not.toMatch(/"d":/);
    expect(dump).not.toContain(secret!.slice(6));
    const [row] = await pg.db('signing_keys');
    expect(Object.keys(row.jwk).sort()).toEqual(['encrypted', 'kid']);
    await delivers(instance, client.clientId, secret!);
    await instance.close();

    // Rotation, step 1: the new key first, the old one after it: everything still decrypts.
    instance = await start(`${NEW_KEY},${OLD_KEY}`);
    expect((await kids(instance.url)).map((k) => k.kid)).toEqual(['legacy-plain-key']);
    await delivers(instance, client.clientId, secret!);
    // Step 2: re-encrypt everything under the new key with the operator script.
    const env = { DATABASE_URL: pg.url, DATA_ENCRYPTION_KEYS: `${NEW_KEY},${OLD_KEY}` };
    const done = await runAdmin(['--json', 'keys', 'reencrypt'], env);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ reencrypted: { signing_keys: 1, webhook_secrets: 1 } });
    expect(JSON.parse((await runAdmin(['--json', 'keys', 'reencrypt'], env)).stdout)).toEqual({ reencrypted: { signing_keys: 0, webhook_secrets: 0 } });
    await instance.close();
    instance = undefined;

    // Step 3: the old key removed: the server starts and signs with only the new one.
    instance = await start(NEW_KEY);
    expect((await kids(instance.url)).map((k) => k.kid)).toEqual(['legacy-plain-key']);
    await delivers(instance, client.clientId, secret!);
    await instance.close();
    instance = undefined;
    // And only the old key no longer opens anything: the server refuses to start rather than make new keys.
    await expect(start(OLD_KEY)).rejects.toThrow(/not in DATA_ENCRYPTION_KEYS/);
    expect((await pg.db('audit_events').where('action', 'keys.reencrypted')).length).toBe(2);
  });
});
