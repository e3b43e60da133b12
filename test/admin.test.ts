// The operator scripts as an operator runs them, against PostgreSQL.
import { describe, expect, it } from 'vitest';
import { ADMIN, admin as runText, spawnAdmin } from './support/processes.ts';
import { expectRefusal, useAdminCli } from './support/admin-cli.ts';

const cli = useAdminCli();
const admin = cli.json;

async function counts() {
  const [users, clients, secrets] = await Promise.all(['users', 'oauth_clients', 'oauth_client_secrets'].map((t) => cli.pg.db(t).count<{ count: string }[]>('* as count')));
  return { users: users![0]!.count, clients: clients![0]!.count, secrets: secrets![0]!.count };
}

describe('operator scripts', () => {
  it('migrate reports nothing left to apply on a migrated database', async () => {
    const res = await admin('migrate');
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ applied: [] });
  });

  it('users create prints the user and stores only a password hash', async () => {
    const res = await admin('users', 'create', '--email', 'Grace@Example.com', '--password', 'hopper-1906', '--name', 'Grace Hopper', '--time-zone', 'America/New_York');
    expect(res.code, res.stderr).toBe(0);
    const user = JSON.parse(res.stdout);
    expect(user).toMatchObject({ id: expect.any(Number), email: 'grace@example.com', username: 'grace', name: 'Grace Hopper' });
    const row = await cli.pg.db('users').where('id', user.id).first();
    expect(row.password_hash).toMatch(/^scrypt\$/);
    expect(row.password_hash).not.toContain('hopper-1906');
  });

  it('users create refuses bad input and duplicates, changing nothing', async () => {
    const before = await counts();
    const cases: Array<[string[], RegExp]> = [
      [['--email', 'grace@example.com', '--password', 'another-pass'], /exists/],
      [['--email', 'not-an-email', '--password', 'long-enough'], /email/],
      [['--email', 'x@example.com', '--password', 'short'], /password/],
      [['--email', 'y@example.com', '--password', 'long-enough', '--time-zone', 'Mars/Olympus'], /time zone/],
    ];
    const results = await Promise.all(cases.map(([args]) => admin('users', 'create', ...args)));
    results.forEach((result, i) => expectRefusal(result, cases[i]![1]));
    expect(await counts()).toEqual(before);
  });

  it('clients create → pending with a one-time secret stored as a hash; approve; show never reveals it', async () => {
    const res = await admin('clients', 'create', '--name', 'Acme', '--redirect-uri', 'https://acme.example/cb', '--redirect-uri', 'http://localhost:8080/cb', '--scope', 'PROFILE_READ,BOOKING_READ', '--scope', 'EVENT_TYPE_READ');
    expect(res.code, res.stderr).toBe(0);
    const created = JSON.parse(res.stdout);
    expect(created).toMatchObject({
      client_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      client_secret: expect.any(String),
      secret_id: expect.any(Number),
      status: 'pending',
      kind: 'confidential',
      legacy: false,
      scopes: ['PROFILE_READ', 'BOOKING_READ', 'EVENT_TYPE_READ'],
      redirect_uris: ['https://acme.example/cb', 'http://localhost:8080/cb'],
    });
    // 256 bits of randomness in the credential format (docs/credentials.md).
    expect(created.client_secret).toMatch(/^spcs_[0-9A-Za-z]{49}$/);
    const stored = await cli.pg.db('oauth_client_secrets').where('client_id', created.client_id);
    expect(stored).toHaveLength(1);
    expect(stored[0].secret_hash).not.toContain(created.client_secret);

    const approved = await admin('clients', 'approve', created.client_id);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ client_id: created.client_id, status: 'approved' });

    const shown = await admin('clients', 'show', created.client_id);
    expect(shown.code, shown.stderr).toBe(0);
    const client = JSON.parse(shown.stdout);
    expect(client).toMatchObject({ status: 'approved', secrets: [{ id: created.secret_id, created_at: expect.any(String), last_used_at: null }] });
    expect(shown.stdout).not.toContain(created.client_secret);
    expect(shown.stdout).not.toContain(stored[0].secret_hash);
  });

  it('clients create --public has no secret', async () => {
    const res = await admin('clients', 'create', '--name', 'Mobile', '--redirect-uri', 'com.example.mobile:/cb', '--scope', 'PROFILE_READ', '--public');
    expect(res.code, res.stderr).toBe(0);
    const created = JSON.parse(res.stdout);
    expect(created.kind).toBe('public');
    expect(created.client_secret).toBeUndefined();
    expect(await cli.pg.db('oauth_client_secrets').where('client_id', created.client_id)).toHaveLength(0);
  });

  it('clients create refuses what the spec forbids, changing nothing', async () => {
    const before = await counts();
    const eleven = Array.from({ length: 11 }, (_, i) => ['--redirect-uri', `https://acme.example/cb${i}`]).flat();
    const cases: Array<[string[], RegExp]> = [
      [['--name', 'Too many', ...eleven, '--scope', 'PROFILE_READ'], /at most 10/],
      [['--name', 'No scope', '--redirect-uri', 'https://acme.example/cb'], /scope/],
      [['--name', 'Bad scope', '--redirect-uri', 'https://acme.example/cb', '--scope', 'ADMIN'], /unknown scope/],
      ...['https://acme.example/cb#frag', 'http://acme.example/cb', 'javascript:alert(1)', '/relative/cb'].map(
        (uri): [string[], RegExp] => [['--name', 'Bad uri', '--redirect-uri', uri, '--scope', 'PROFILE_READ'], /redirect URI/],
      ),
      [['--name', 'Custom scheme', '--redirect-uri', 'com.example.app:/cb', '--scope', 'PROFILE_READ'], /public/],
    ];
    const results = await Promise.all(cases.map(([args]) => admin('clients', 'create', ...args)));
    results.forEach((result, i) => expectRefusal(result, cases[i]![1]));
    expect(await counts()).toEqual(before);
  });

  it('refuses unknown clients and illegal transitions', async () => {
    const [show, approve] = await Promise.all([admin('clients', 'show', 'no-such-client'), admin('clients', 'approve', 'no-such-client')]);
    expectRefusal(show, /no client/);
    expectRefusal(approve, /no client/);
    const created = JSON.parse((await admin('clients', 'create', '--name', 'R', '--redirect-uri', 'https://r.example/cb', '--scope', 'PROFILE_READ')).stdout);
    expect((await admin('clients', 'reject', created.client_id)).code).toBe(0);
    expectRefusal(await admin('clients', 'approve', created.client_id), /rejected client cannot become approved/);
    expect((await cli.pg.db('oauth_clients').where('id', created.client_id).first()).status).toBe('rejected');
  });

  it('runs as its own process: readable text without --json, a one-line refusal with exit 1, help', async () => {
    // The command as people type it, once (the others run the same code bundled: test/support/processes.ts).
    const res = await spawnAdmin(['users', 'create', '--email', 'text@example.com', '--password', 'long-enough'], cli.env, '', undefined, ADMIN.npm);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/^id: \d+$/m);
    expect(res.stdout).toMatch(/^email: text@example.com$/m);
    const refusal = await spawnAdmin(['--json', 'clients', 'approve', 'no-such-client'], cli.env);
    expect(refusal.code).toBe(1);
    // With --json, a failure is a JSON document on stdout as well as the one line on stderr.
    expect(JSON.parse(refusal.stdout)).toEqual({ error: { message: 'no client with id no-such-client' } });
    expect(refusal.stderr).toBe('error: no client with id no-such-client\n');
    const textRefusal = await runText(['clients', 'approve', 'no-such-client'], cli.env);
    expect(textRefusal).toEqual({ code: 1, stdout: '', stderr: 'error: no client with id no-such-client\n' });
    const help = await spawnAdmin(['clients', 'create', '--help'], cli.env);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--redirect-uri');
  });

  it('--json usage errors are a JSON error object too, with a non-zero exit', async () => {
    for (const args of [['clients', 'frobnicate'], ['clients', 'create'], []]) {
      const res = await admin(...args);
      expect(res.code, args.join(' ')).not.toBe(0);
      expect(JSON.parse(res.stdout), args.join(' ')).toEqual({ error: { message: expect.any(String) } });
    }
  });

  it('users list: id, email, username, name, admin flag and source; a table in text mode', async () => {
    expect((await admin('users', 'set-admin', 'grace@example.com')).code).toBe(0);
    const res = await admin('users', 'list');
    expect(res.code, res.stderr).toBe(0);
    const { users } = JSON.parse(res.stdout);
    expect(users).toContainEqual({ id: expect.any(Number), email: 'grace@example.com', username: 'grace', name: 'Grace Hopper', admin: true, source: ['local'], upstream: [] });
    expect(users).toContainEqual(expect.objectContaining({ email: 'text@example.com', admin: false }));
    for (const u of users) expect(Object.keys(u).sort()).toEqual(['admin', 'email', 'id', 'name', 'source', 'upstream', 'username']);

    const text = await runText(['users', 'list'], cli.env);
    expect(text.code, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +EMAIL +USERNAME +ADMIN +SOURCE +NAME$/);
    expect(lines).toHaveLength(users.length + 1);
    expect(lines).toContainEqual(expect.stringMatching(/^\d+ +grace@example\.com +grace +yes +local +Grace Hopper$/));
  });

  it('users link and unlink: an upstream account named by issuer and subject (docs/accounts.md)', async () => {
    const linked = await admin('users', 'link', 'grace@example.com', '--issuer', 'https://id.example.com', '--subject', 'grace-at-id');
    expect(linked.code, linked.stderr).toBe(0);
    expect(JSON.parse(linked.stdout)).toMatchObject({ email: 'grace@example.com', issuer: 'https://id.example.com', subject: 'grace-at-id', linked: true });
    const text = await runText(['users', 'list'], cli.env);
    expect(text.stdout).toMatch(/grace@example\.com +grace +yes +local\+upstream +Grace Hopper$/m);
    const listed = JSON.parse((await admin('users', 'list')).stdout).users.find((u: { email: string }) => u.email === 'grace@example.com');
    expect(listed.upstream).toEqual([{ issuer: 'https://id.example.com', subject: 'grace-at-id' }]);
    // The same upstream account for another user: refused, nothing changed.
    const taken = await admin('users', 'link', 'text@example.com', '--issuer', 'https://id.example.com', '--subject', 'grace-at-id');
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/linked to user \d+/);
    expect((await admin('users', 'unlink', 'grace@example.com')).code).toBe(0);
    const again = await admin('users', 'unlink', 'grace@example.com');
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/no upstream link/);
  });

  it('prints "shown only once" next to a secret in text mode (JSON unchanged)', async () => {
    const created = await runText(['clients', 'create', '--name', 'Once', '--redirect-uri', 'https://once.example/cb', '--scope', 'PROFILE_READ'], cli.env);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^client_secret: spcs_[0-9A-Za-z]{49} +\(shown only once\)$/m);
    const id = /^client_id: (\S+)$/m.exec(created.stdout)![1]!;
    const generated = await runText(['secrets', 'generate', id], cli.env);
    expect(generated.code, generated.stderr).toBe(0);
    expect(generated.stdout).toMatch(/^client_secret: spcs_[0-9A-Za-z]{49} +\(shown only once\)$/m);
    const json = await admin('secrets', 'list', id);
    expect(json.stdout).not.toContain('shown only once');
  });

  it('help: global options in every subcommand, --scope marked required, no internal document references', async () => {
    const create = await runText(['clients', 'create', '--help'], cli.env);
    expect(create.stdout.replace(/\s+/g, ' ')).toMatch(/--scope <scopes> .*required unless --legacy or --resource-server/);
    for (const args of [['--help'], ['clients', 'approve', '--help'], ['users', 'list', '--help'], ['secrets', 'generate', '--help'], ['clients', 'create', '--help']]) {
      const help = await runText(args, cli.env);
      expect(help.code).toBe(0);
      expect(help.stdout, args.join(' ')).toMatch(/--json +print exactly one JSON document/);
      expect(help.stdout, args.join(' ')).toMatch(/--reason <text>/);
      expect(help.stdout, args.join(' ')).not.toMatch(/CONTRACT|\bspec\b/i);
    }
  });
});
