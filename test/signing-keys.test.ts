// Rotating the token-signing key (`keys rotate`, docs/operations.md) across two instances on one
// PostgreSQL database, each with its own pool: the new key is published by both as soon as the
// change feed tells them, before it signs; after the delay (a moved clock, shared by the
// instances and the CLI) both sign with it, verifiably against their key sets; the old key stays
// published until its retire time, then is gone, and the next rotation removes its row. Bad input
// changes nothing. On the embedded database (PGlite) a rotation made while the server is stopped
// is what it serves at its next start; while it runs, the change is refused.
// Nothing the server issues today is signed (docs/security.md): what would be, an ID token, is
// signed here through the provider's own model, after a request to the instance — the provider
// applies the keys due at each of its requests, and it signs only inside one.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { createTestDatabase, type TestDatabase } from './support/services.ts';
import { startInstance, type AppInstance } from './support/server.ts';
import { testClock } from './support/clock.ts';
import { eventually } from './support/eventually.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { spawnAdmin, startServerProcess, type CliResult } from './support/processes.ts';
import { copyMigratedDataDir } from './support/embedded-template.ts';
import { runAdmin } from '../src/admin/program.ts';
import { clientsCreate, clientsSetStatus, type AdminContext } from '../src/admin/commands.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../src/webhooks/outbox.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { PROVIDER_PATH } from '../src/http/paths.ts';
import { ID_TOKEN_TTL } from '../src/oauth/signing-keys.ts';

const HOUR = 3600_000;
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'priv'];

const jwksAt = async (url: string): Promise<JSONWebKeySet> => {
  const res = await fetch(`${url}${PROVIDER_PATH}/jwks`);
  expect(res.status).toBe(200);
  return (await res.json()) as JSONWebKeySet;
};
const kidsOf = (set: JSONWebKeySet) => set.keys.map((k) => k.kid);

describe('keys rotate across two instances on PostgreSQL', () => {
  const clock = testClock();
  let pg: TestDatabase;
  let a: AppInstance;
  let b: AppInstance;
  let clientId: string;
  let env: Record<string, string>;

  /** The operator CLI in this process, on the instances' clock. */
  async function cli(...args: string[]): Promise<CliResult> {
    let stdout = '';
    let stderr = '';
    const code = await runAdmin(args, { env: { DATABASE_URL: pg.url }, clock, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  }
  const json = async (...args: string[]) => {
    const result = await cli('--json', ...args);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout);
  };
  const rows = () => pg.db('signing_keys').orderBy('kid').select('kid', 'jwk', 'created_at', 'sign_from', 'retire_after');

  /** An ID token as the instance's provider signs one (see the file's comment). */
  async function signedBy(instance: AppInstance): Promise<string> {
    await jwksAt(instance.url);
    const { provider } = instance.system;
    const client = await provider.Client.find(clientId);
    return new provider.IdToken({ sub: 'rotation-test' }, { client: client! }).issue({ use: 'idtoken' });
  }
  const kidOf = (jwt: string) => decodeProtectedHeader(jwt).kid;
  const verifiesAt = async (jwt: string, instance: AppInstance) =>
    jwtVerify(jwt, createLocalJWKSet(await jwksAt(instance.url)), { issuer: instance.system.provider.issuer, audience: clientId }).then(
      () => true,
      () => false,
    );

  beforeAll(async () => {
    pg = await createTestDatabase();
    env = { DATABASE_URL: pg.url, COOKIE_KEYS: 'signing-keys-cookie-key-shared-by-instances' };
    a = await startInstance(env, { clock });
    b = await startInstance({ ...env, APP_URL: a.url }, { clock });
    const ops: AdminContext = { db: pg.db, artifacts: clientArtifacts(pg.db), outbox: webhookOutbox(pg.db), records: uncachedRecords(), by: { actor: 'operator:test' } };
    clientId = (await clientsCreate(ops, { name: 'Rotation App', redirectUri: ['https://app.example.com/cb'], scope: ['PROFILE_READ'] })).client_id;
    await clientsSetStatus(ops, clientId, 'approved');
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await pg?.drop();
    clock.reset();
  });

  let first: string;
  let second: string;
  let signFrom: string;
  let retireAfter: string;
  let signedByFirst: string;

  it('lists the one key, signing, without key material', async () => {
    const { keys } = await json('keys', 'list');
    expect(keys).toHaveLength(1);
    expect(keys[0]).toEqual({ kid: expect.any(String), state: 'signing', created_at: expect.any(String), sign_from: expect.any(String), retire_after: null });
    first = keys[0].kid;
    expect(kidsOf(await jwksAt(a.url))).toEqual([first]);
    expect(kidsOf(await jwksAt(b.url))).toEqual([first]);
    signedByFirst = await signedBy(a);
    expect(kidOf(signedByFirst)).toBe(first);
  });

  it('refuses a malformed, negative or too long --delay in one line, changing nothing', async () => {
    const before = await rows();
    for (const delay of ['soon', '-5m', '1.5h', '31d', '']) {
      const result = await cli('keys', 'rotate', '--delay', delay);
      expectRefusal(result, /^error: --delay must be (a whole number with a unit, s, m, h or d \(90s, 1h, 7d\), )?from 0s to 30d/);
    }
    expectRefusal(await cli('--json', 'keys', 'rotate', '--delay=-1h'), /^error: --delay must be/);
    expect(await rows()).toEqual(before);
  });

  it('publishes a new key on both instances at once; it does not sign before the delay', async () => {
    const now = clock.now();
    const rotated = await json('keys', 'rotate', '--delay', '1h');
    second = rotated.kid;
    signFrom = rotated.sign_from;
    expect(second).not.toBe(first);
    expect(Date.parse(rotated.published_at)).toBeGreaterThanOrEqual(now);
    expect(Date.parse(rotated.published_at)).toBeLessThanOrEqual(clock.now());
    expect(Date.parse(signFrom) - Date.parse(rotated.published_at)).toBe(HOUR);
    retireAfter = new Date(Date.parse(signFrom) + ID_TOKEN_TTL * 1000).toISOString();
    expect(rotated.replaced).toEqual([{ kid: first, retire_after: retireAfter }]);
    expect(rotated.removed).toEqual([]);
    // Both hear it from the change feed: published, the signing key still first.
    for (const instance of [a, b]) await eventually(async () => expect(kidsOf(await jwksAt(instance.url))).toEqual([first, second]));
    for (const instance of [a, b]) {
      const published = await jwksAt(instance.url);
      for (const key of published.keys) for (const member of PRIVATE_MEMBERS) expect(key).not.toHaveProperty(member);
      expect(published.keys[1]).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: second });
      expect(Object.keys(published.keys[1]!).sort()).toEqual(Object.keys(published.keys[0]!).sort());
      expect(kidOf(await signedBy(instance))).toBe(first);
    }
    const { keys } = await json('keys', 'list');
    expect(keys.map((k: { kid: string; state: string }) => [k.kid, k.state])).toEqual([[second, 'next'], [first, 'signing']]);
    expect(await pg.db('audit_events').where('action', 'keys.rotated').count({ n: '*' })).toEqual([{ n: '1' }]);
  });

  it('refuses another rotation while the new key waits to sign, changing nothing', async () => {
    const before = await rows();
    expectRefusal(await cli('keys', 'rotate'), new RegExp(`^error: key ${second} is already waiting to sign \\(from ${signFrom.replace(/\./g, '\\.')}\\): rotate again once it signs; nothing was changed$`));
    expect(await rows()).toEqual(before);
  });

  it('signs with the new key on both once its time comes; the old key stays published for what it signed', async () => {
    clock.passed(signFrom);
    for (const instance of [a, b]) {
      const token = await signedBy(instance);
      expect(kidOf(token)).toBe(second);
      expect(await verifiesAt(token, instance)).toBe(true);
      expect(kidsOf(await jwksAt(instance.url))).toEqual([second, first]);
      // Signed by the old key before the switch: still verifiable.
      expect(await verifiesAt(signedByFirst, instance)).toBe(true);
    }
    const { keys } = await json('keys', 'list');
    expect(keys.map((k: { kid: string; state: string; retire_after: string | null }) => [k.kid, k.state, k.retire_after])).toEqual([
      [second, 'signing', null],
      [first, 'retiring', retireAfter],
    ]);
  });

  it('a third instance started now serves the same', async () => {
    const c = await startInstance({ ...env, APP_URL: a.url }, { clock });
    try {
      expect(kidsOf(await jwksAt(c.url))).toEqual([second, first]);
      expect(kidOf(await signedBy(c))).toBe(second);
    } finally {
      await c.close();
    }
  });

  it('drops the old key from both key sets at its retire time; the next rotation removes it', async () => {
    clock.passed(retireAfter);
    for (const instance of [a, b]) {
      expect(kidsOf(await jwksAt(instance.url))).toEqual([second]);
      expect(await verifiesAt(signedByFirst, instance)).toBe(false);
      expect(kidOf(await signedBy(instance))).toBe(second);
    }
    expect((await json('keys', 'list')).keys.map((k: { state: string }) => k.state)).toEqual(['signing', 'retired']);
    const text = await cli('keys', 'rotate', '--delay', '0s');
    expect(text.code, text.stderr).toBe(0);
    const third = /^new signing key ([0-9a-f]+): published now by every running instance \(jwks_uri\), signs from \S+\n/.exec(text.stdout)?.[1];
    expect(third, text.stdout).toBeDefined();
    expect(text.stdout).toContain(`key ${second} signs until then and stays published until `);
    expect(text.stdout).toContain(`removed retired key ${first}`);
    expect((await rows()).map((r) => r.kid).sort()).toEqual([second, third].sort());
    // A zero delay: it signs at once, wherever the change has been heard.
    for (const instance of [a, b]) await eventually(async () => expect(kidOf(await signedBy(instance))).toBe(third));
    const listed = await cli('keys', 'list');
    expect(listed.stdout.split('\n')[0]).toMatch(/^KID\s+STATE\s+PUBLISHED\s+SIGNS FROM\s+RETIRES$/);
  });
});

describe('keys rotate on the embedded database (PGlite)', () => {
  let dir: string;
  let dataDir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'signing-keys-'));
    dataDir = path.join(dir, 'data');
    await copyMigratedDataDir(dataDir);
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to rotate while the server holds it, lists through it; a rotation made while stopped is served at the next start', async () => {
    let server = await startServerProcess({ DATA_DIR: dataDir }, 60_000);
    let first: string;
    try {
      const published = await jwksAt(server.url);
      expect(published.keys).toHaveLength(1);
      first = published.keys[0]!.kid!;
      const [refused, listed] = await Promise.all([spawnAdmin(['keys', 'rotate'], { DATA_DIR: dataDir }), spawnAdmin(['--json', 'keys', 'list'], { DATA_DIR: dataDir })]);
      expectRefusal(refused, /^error: the server \(pid \d+\) is using the embedded database .*stop it \(Ctrl-C\) to make changes/);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout).keys.map((k: { kid: string; state: string }) => [k.kid, k.state])).toEqual([[first, 'signing']]);
    } finally {
      await server.stop();
    }
    const rotated = await spawnAdmin(['--json', 'keys', 'rotate', '--delay', '0s'], { DATA_DIR: dataDir });
    expect(rotated.code, rotated.stderr).toBe(0);
    const { kid: second, replaced } = JSON.parse(rotated.stdout);
    expect(replaced.map((r: { kid: string }) => r.kid)).toEqual([first]);
    server = await startServerProcess({ DATA_DIR: dataDir }, 60_000);
    try {
      // The new key signs (first in the set), the old one stays published.
      expect(kidsOf(await jwksAt(server.url))).toEqual([second, first]);
    } finally {
      await server.stop();
    }
  }, 120_000); // two starts of the bundled server and four script runs, as test/embedded.test.ts allows
});
