// Issue 38 point 9 (the operator scripts) and point 5 (users set-password), as an operator runs
// them against PostgreSQL: a usage line one can type, with examples; one line saying what
// approve/reject/suspend did; a suggestion for a mistyped scope; `clients delete` that asks for
// --force and says what would go; a new password for a user.
import { describe, expect, it } from 'vitest';
import { admin as runText, freePort, spawnAdmin, type CliResult } from './support/processes.ts';
import { expectRefusal, useAdminCli } from './support/admin-cli.ts';
import { authenticateUser } from '../src/accounts/store.ts';
import { passwordHashing } from '../src/accounts/password.ts';

const cli = useAdminCli();
const admin = cli.json;
const text = (...args: string[]) => runText(args, cli.env);
const ok = (res: CliResult) => {
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};
const create = async (name = 'App') => ok(await admin('clients', 'create', '--name', name, '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'));

describe('operator scripts people can use', () => {
  it('the usage line is a command one can type, with examples', async () => {
    const help = await spawnAdmin(['--help'], cli.env);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm run --silent admin -- \[options\] \[command\]$/m);
    expect(help.stdout).toMatch(/^Examples:$/m);
    expect(help.stdout).toMatch(/^ {2}npm run --silent admin -- clients approve CLIENT_ID/m);
    const none = await admin();
    expect(JSON.parse(none.stdout)).toEqual({ error: { message: 'no command given: see npm run --silent admin -- --help' } });
    const sub = await text('clients', 'approve', '--help');
    expect(sub.stdout).toMatch(/^Usage: npm run --silent admin -- clients approve \[options\] <id>$/m);
  });

  it('approve, suspend, reject: one line saying what happened, or that nothing did; JSON as before', async () => {
    const a = await create('Outcome App');
    expect(await text('clients', 'approve', a.client_id)).toEqual({ code: 0, stderr: '', stdout: `approved client ${a.client_id} ("Outcome App"): users can now authorize it\n` });
    expect((await text('clients', 'approve', a.client_id)).stdout).toBe(`client ${a.client_id} ("Outcome App") is already approved: nothing changed\n`);
    expect((await text('clients', 'suspend', a.client_id)).stdout).toBe(`suspended client ${a.client_id} ("Outcome App"): its codes, tokens and grants stopped working\n`);
    expect((await text('clients', 'approve', a.client_id)).stdout).toBe(`reinstated client ${a.client_id} ("Outcome App"): users can now authorize it\n`);
    const b = await create('Rejected App');
    expect((await text('clients', 'reject', b.client_id)).stdout).toBe(`rejected client ${b.client_id} ("Rejected App"): it cannot be authorized\n`);
    // --json: the client document, unchanged.
    const json = ok(await admin('clients', 'suspend', a.client_id));
    expect(json).toMatchObject({ client_id: a.client_id, status: 'suspended', name: 'Outcome App' });
    expect(json).not.toHaveProperty('changed');
  });

  it('a mistyped scope gets a suggestion; nothing is created', async () => {
    const before = await cli.pg.db('oauth_clients').count<{ n: string }[]>('* as n');
    const cases: Array<[string, RegExp]> = [
      ['PROFILE_REED', /unknown scope: PROFILE_REED \(did you mean PROFILE_READ\?\)/],
      ['profile-read', /unknown scope: profile-read \(did you mean PROFILE_READ\?\)/],
      ['BOOKINGS_READ', /did you mean BOOKING_READ\?/],
      ['NOPE', /^error: unknown scope: NOPE$/],
    ];
    for (const [scope, reason] of cases) {
      expectRefusal(await admin('clients', 'create', '--name', 'Typo', '--redirect-uri', 'https://t.example/cb', '--scope', scope), reason);
    }
    const c = await create();
    expectRefusal(await admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', 'SCHEDULE_RAED'), /did you mean SCHEDULE_READ\?/);
    expect(await cli.pg.db('oauth_clients').count<{ n: string }[]>('* as n')).toEqual([{ n: String(Number(before[0]!.n) + 1) }]);
  });

  it('clients delete asks for --force, saying what would go; with it the client and its secrets are gone', async () => {
    const c = await create('Doomed App');
    const refused = await admin('clients', 'delete', c.client_id);
    expectRefusal(refused, new RegExp(`deleting removes client ${c.client_id} \\("Doomed App", pending\\) for good, with 1 active secret, the access of 0 users and every token it holds: run again with --force`));
    expect(await cli.pg.db('oauth_clients').where('id', c.client_id).first()).toBeDefined();

    const deleted = await text('clients', 'delete', c.client_id, '--force');
    expect(deleted).toEqual({ code: 0, stderr: '', stdout: `deleted client ${c.client_id} ("Doomed App"): 1 secret and the access of 0 users removed\n` });
    expect(await cli.pg.db('oauth_clients').where('id', c.client_id).first()).toBeUndefined();
    expect(await cli.pg.db('oauth_client_secrets').where('client_id', c.client_id)).toEqual([]);
    expect(await cli.pg.db('audit_events').where({ client_id: c.client_id, action: 'client.deleted' }).first()).toMatchObject({ actor: expect.stringMatching(/^operator:/) });
    expectRefusal(await admin('clients', 'delete', c.client_id, '--force'), /no client with id/);
  });

  it('users set-password: by e-mail or id, ends the sessions, refuses a short password or an unknown user', async () => {
    const user = ok(await admin('users', 'create', '--email', 'lost@example.com', '--password', 'the-old-password'));
    await cli.pg.db('web_sessions').insert({ id: 'a-session-hash', user_id: user.id, expires_at: new Date(Date.now() + 3600_000) });
    expect(ok(await admin('users', 'set-password', 'lost@example.com', '--password', 'the-new-password'))).toEqual({ id: user.id, email: 'lost@example.com', password_set: true, sessions_ended: 1 });
    const passwords = passwordHashing({ logN: 10 });
    expect(await authenticateUser({ db: cli.pg.db, passwords }, 'lost@example.com', 'the-new-password')).toMatchObject({ id: user.id });
    expect(await authenticateUser({ db: cli.pg.db, passwords }, 'lost@example.com', 'the-old-password')).toBeUndefined();
    expect(ok(await admin('users', 'set-password', String(user.id), '--password', 'a-third-password'))).toMatchObject({ id: user.id, sessions_ended: 0 });

    const hash = (await cli.pg.db('users').where('id', user.id).first()).password_hash;
    expectRefusal(await admin('users', 'set-password', 'lost@example.com', '--password', 'short'), /at least 8 characters/);
    expectRefusal(await admin('users', 'set-password', 'nobody@example.com', '--password', 'long-enough'), /no user "nobody@example.com"/);
    expectRefusal(await admin('users', 'set-password', 'lost@example.com'), /exactly one of --password or --password-stdin/);
    expect((await cli.pg.db('users').where('id', user.id).first()).password_hash).toBe(hash);
  });

  it('a deliberate refusal says what happened and what to do, never "unexpected failure": a recently used secret', async () => {
    const c = ok(await admin('clients', 'approve', (await create('Busy App')).client_id));
    const [secret] = ok(await admin('secrets', 'list', c.client_id)).secrets;
    const lastUsed = new Date(Date.now() - 60_000);
    await cli.pg.db('oauth_client_secrets').where('id', secret.id).update({ last_used_at: lastUsed });

    const refused = await text('secrets', 'revoke', c.client_id, String(secret.id));
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr: `error: secret ${secret.id} was last used ${lastUsed.toISOString()}, less than 10 minutes ago, so the app may still be sending it: nothing was revoked. To revoke it anyway, run the command again with --force\n`,
    });
    expectRefusal(await admin('secrets', 'revoke', c.client_id, String(secret.id)), /^error: secret \d+ was last used .*run the command again with --force$/);
    expect(ok(await admin('secrets', 'list', c.client_id)).secrets.map((s: { id: number }) => s.id)).toEqual([secret.id]);
    expect(ok(await admin('secrets', 'revoke', c.client_id, String(secret.id), '--force'))).toBeDefined();
    expect(ok(await admin('secrets', 'list', c.client_id)).secrets).toEqual([]);
  });

  it('a refusal of the configuration is one too: a stored secret under a key no longer in DATA_ENCRYPTION_KEYS', async () => {
    const c = await create('Keyed App');
    const env = { ...cli.env, WEBHOOK_ALLOW_LOOPBACK: 'true', DATA_ENCRYPTION_KEYS: 'an-old-data-encryption-key-of-32-chars-or-more' };
    const set = await runText(['--json', 'clients', 'set-webhook', c.client_id, 'http://127.0.0.1:9/hooks'], env);
    expect(set.code, set.stderr).toBe(0);
    const stored = await cli.pg.db('webhook_secrets').where('client_id', c.client_id).pluck('secret');
    const other = { ...env, DATA_ENCRYPTION_KEYS: 'a-new-data-encryption-key-of-32-chars-or-more' };
    expectRefusal(
      await runText(['--json', 'keys', 'reencrypt'], other),
      /^error: a stored secret is encrypted under key \w+, which is not in DATA_ENCRYPTION_KEYS: put that key back in the list \(after the current one\) and run keys reencrypt before removing it$/,
    );
    expect(await cli.pg.db('webhook_secrets').where('client_id', c.client_id).pluck('secret')).toEqual(stored);
  });

  it('a failure nobody meant still says so: the database unreachable', async () => {
    const env = { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/nowhere` };
    const failed = await runText(['clients', 'list'], env);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(/^error: unexpected failure: .*ECONNREFUSED.*\n$/);
    const json = await runText(['--json', 'clients', 'list'], env);
    expectRefusal(json, /^error: unexpected failure: /);
  });
});
