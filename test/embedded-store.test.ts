// The embedded database (PGlite) answers as PostgreSQL does where our code reads the answer: row
// counts of delete, update and increment; jsonb parameters; error codes; no NOTIFY. On one
// connection to a copy of a migrated DATA_DIR: each open costs seconds of CPU. Its first start
// from an empty DATA_DIR, and the scripts and the server opening it, are test/embedded.test.ts's.
import { generateKeyPairSync } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDb, type Db } from '../src/storage/db.ts';
import * as store from '../src/orgs/store.ts';
import { updateClient } from '../src/clients/repository.ts';
import * as commands from '../src/admin/commands.ts';
import type { AdminContext } from '../src/admin/commands.ts';
import { orgsSetAppPolicyWithEffects } from '../src/admin/installation-commands.ts';
import type { PasswordDeps } from '../src/accounts/store.ts';
import { passwordHashing } from '../src/accounts/password.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { clientArtifacts } from '../src/storage/client-artifacts.ts';
import { webhookOutbox } from '../src/webhooks/outbox.ts';
import { copyMigratedDataDir } from './support/embedded-template.ts';

let dataDir: string;
let umask: number;
let db: Db;
beforeAll(async () => {
  // Opening the data directory tightens this process's umask (src/storage/data-dir.ts): put back after.
  umask = process.umask(0o022);
  process.umask(umask);
  dataDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-store-')), 'data');
  await copyMigratedDataDir(dataDir); // migrated, as `migrate` leaves it
  db = connectDb({ databaseUrl: undefined, dataDir });
});
afterAll(async () => {
  await db?.destroy();
  process.umask(umask);
  if (dataDir) fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
});

// Code that reads `removed > 0` (a disconnected app's grant.revoked event, a replaced webhook
// secret) must work on both.
describe('row counts', () => {
  beforeAll(async () => {
    await db.schema.createTable('rows', (t) => {
      t.integer('id');
      t.integer('n').defaultTo(0);
    });
    await db('rows').insert([{ id: 1 }, { id: 2 }, { id: 3 }]);
  });

  it('counts the rows a delete, an update and an increment touched', async () => {
    expect(await db('rows').where('id', '>', 1).update({ n: 5 })).toBe(2);
    expect(await db('rows').where('id', 3).increment('n', 1)).toBe(1);
    expect(await db('rows').where('id', '<', 3).delete()).toBe(2);
    expect(await db('rows').where('id', 9).delete()).toBe(0);
    expect(await db('rows').select('id', 'n')).toEqual([{ id: 3, n: 6 }]);
  });
});

// The same functions the operator scripts run (src/admin/commands.ts), with what a script's
// session holds (src/admin/program.ts): no cache, no Redis, no webhook queue.
describe('organization scripts on the embedded database', () => {
  let ctx: AdminContext & PasswordDeps;
  beforeAll(async () => {
    ctx = { db, records: uncachedRecords(), artifacts: clientArtifacts(db), outbox: webhookOutbox(db), by: { actor: 'operator:test' }, passwords: passwordHashing({ logN: 10 }) };
    expect(await commands.migrate(db)).toEqual({ applied: [] });
  });

  it('creates an organization, teams and memberships; refuses a team member outside the organization', async () => {
    const alice = await commands.usersCreate(ctx, { email: 'alice@example.com', password: 'correct horse' });
    const bob = await commands.usersCreate(ctx, { email: 'bob@example.com', password: 'correct horse' });
    const org = await commands.orgsCreate(ctx, { name: 'Embedded Org' });
    const team = await commands.teamsCreate(ctx, { name: 'Crew', org: String(org.id) });
    expect(await commands.orgsAddMember(ctx, String(org.id), 'alice@example.com', { role: 'owner' })).toEqual({ org_id: org.id, user_id: alice.id, role: 'owner' });
    expect(await commands.teamsAddMember(ctx, String(team.id), String(alice.id), { role: 'admin' })).toEqual({ team_id: team.id, user_id: alice.id, role: 'admin' });
    await expect(commands.teamsAddMember(ctx, String(team.id), String(bob.id))).rejects.toThrow(/not a member of organization/);
    expect((await orgsSetAppPolicyWithEffects(ctx, String(org.id), 'approval')).app_policy).toBe('approval');
    const shown = await commands.orgsShow(ctx, String(org.id));
    expect(shown.teams).toEqual([{ id: team.id, name: 'Crew', org_id: org.id, members: [{ user_id: alice.id, role: 'admin' }] }]);
    expect(await commands.installationsList(ctx, { org: String(org.id) })).toEqual({ installations: [] });
    const app = await commands.clientsCreate(ctx, { name: 'App', redirectUri: ['https://app.example/cb'], scope: ['PROFILE_READ'] });
    expect((await commands.clientsSetScopes(ctx, app.client_id, ['PROFILE_READ', 'BOOKING_READ'], { optional: ['BOOKING_READ'] })).optional_scopes).toEqual(['BOOKING_READ']);

    // The store's counts (knex resolved delete/update to an object here).
    expect(await store.removeOrgMember(db, org.id, alice.id)).toBe(true);
    expect(await store.teamsOfUser(db, alice.id)).toEqual([]);
    expect(await store.removeTeamMember(db, team.id, alice.id)).toBe(false);
    // A change of scopes by another path keeps the optional ones that remain (the jsonb filter).
    await db.transaction((trx) => updateClient(trx, app.client_id, { scopes: ['BOOKING_READ', 'SCHEDULE_READ'] }));
    expect(await db('oauth_clients').where('id', app.client_id).first('optional_scopes')).toEqual({ optional_scopes: ['BOOKING_READ'] });
  });

  // private_key_jwt (docs/private-key-jwt.md): the key set, a jsonb value, round-trips, and the
  // client's secret is revoked. The flow with assertions is test/private-key-jwt.test.ts's.
  it('sets a client\'s keys: the key set kept as given, its secret revoked', async () => {
    const app = await commands.clientsCreate(ctx, { name: 'Keyed', redirectUri: ['https://keyed.example/cb'], scope: ['PROFILE_READ'] });
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwks = { keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] };
    const set = await commands.clientsSetKeys(ctx, app.client_id, { jwks: JSON.stringify(jwks) });
    expect(set).toMatchObject({ token_endpoint_auth_method: 'private_key_jwt', jwks, revoked_secret_ids: [app.secret_id] });
    expect(await db('oauth_clients').where('id', app.client_id).first('jwks', 'jwks_uri')).toEqual({ jwks, jwks_uri: null });
    const unrevoked = await db('oauth_client_secrets').where({ client_id: app.client_id }).whereNull('revoked_at').count('* as n').first();
    expect(Number(unrevoked!.n)).toBe(0);
  });
});
