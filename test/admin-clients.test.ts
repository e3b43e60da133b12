// The client lifecycle scripts as an operator runs them, against PostgreSQL: listing, scopes,
// redirect URIs, secrets, status transitions and the audit trail.
import { describe, expect, it } from 'vitest';
import { admin as runAdmin, type CliResult } from './support/processes.ts';
import { expectRefusal as refused, useAdminCli } from './support/admin-cli.ts';

const cli = useAdminCli();
const admin = cli.json;
const ok = (res: CliResult) => {
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};
const createClient = async (...extra: string[]) =>
  ok(await admin('clients', 'create', '--name', 'App', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ', ...extra));
const row = (id: string) => cli.pg.db('oauth_clients').where('id', id).first();

describe('client lifecycle scripts', () => {
  it('lists clients, filtered by status; refuses an unknown status', async () => {
    const a = await createClient();
    const b = await createClient();
    ok(await admin('clients', 'approve', b.client_id));
    const [all, approved, bad] = await Promise.all([admin('clients', 'list'), admin('clients', 'list', '--status', 'approved'), admin('clients', 'list', '--status', 'weird')]);
    expect(ok(all).clients.map((c: { client_id: string }) => c.client_id)).toEqual(expect.arrayContaining([a.client_id, b.client_id]));
    expect(ok(approved).clients.map((c: { client_id: string }) => c.client_id)).toEqual([b.client_id]);
    refused(bad, /--status must be one of/);
  });

  it('creates a client for an owner (id or e-mail), who manages it in the developer settings; an unknown owner creates nothing', async () => {
    const user = ok(await admin('users', 'create', '--email', 'Owner@Example.com', '--password', 'owner-password-1'));
    expect(ok(await admin('clients', 'show', (await createClient()).client_id)).owner_user_id).toBeNull();
    const byEmail = await createClient('--owner', 'owner@example.com');
    const byId = await createClient('--owner', String(user.id));
    for (const c of [byEmail, byId]) {
      expect(c.owner_user_id).toBe(user.id);
      expect((await row(c.client_id)).owner_user_id).toBe(user.id);
    }
    expect(ok(await admin('clients', 'show', byId.client_id)).owner_user_id).toBe(user.id);
    const before = (await cli.pg.db('oauth_clients').count({ n: '*' }))[0]!.n;
    for (const owner of ['nobody@example.com', '999999', 'not-a-user', '']) refused(await admin('clients', 'create', '--name', 'Orphan', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ', '--owner', owner), /no user/);
    expect((await cli.pg.db('oauth_clients').count({ n: '*' }))[0]!.n).toBe(before);
  });

  it('sets scopes; refuses unknown or no scopes, changing nothing', async () => {
    const c = await createClient();
    expect(ok(await admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ,BOOKING_READ', 'SCHEDULE_READ')).scopes).toEqual(['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ']);
    const [unknown, empty, missing] = await Promise.all([
      admin('clients', 'set-scopes', c.client_id, 'PROFILE_READ', 'NOPE'),
      admin('clients', 'set-scopes', c.client_id, ','),
      admin('clients', 'set-scopes', 'no-such-client', 'PROFILE_READ'),
    ]);
    refused(unknown, /unknown scope: NOPE/);
    refused(empty, /at least one scope/);
    refused(missing, /no client/);
    expect((await row(c.client_id)).scopes).toEqual(['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ']);
  });

  it('adds and removes redirect URIs within the rules', async () => {
    const c = await createClient();
    for (let i = 2; i <= 10; i++) ok(await admin('clients', 'add-redirect-uri', c.client_id, `https://app.example/cb${i}`));
    const [eleventh, fragment, plainHttp, dup] = await Promise.all([
      admin('clients', 'add-redirect-uri', c.client_id, 'https://app.example/cb11'),
      admin('clients', 'add-redirect-uri', c.client_id, 'https://app.example/x#y'),
      admin('clients', 'add-redirect-uri', c.client_id, 'http://app.example/x'),
      admin('clients', 'add-redirect-uri', c.client_id, 'https://app.example/cb2'),
    ]);
    refused(eleventh, /at most 10/);
    refused(fragment, /fragment/);
    refused(plainHttp, /https/);
    refused(dup, /already has/);
    const shown = ok(await admin('clients', 'remove-redirect-uri', c.client_id, 'https://app.example/cb'));
    expect(shown.redirect_uris).toHaveLength(9);
    expect(shown.redirect_uris).not.toContain('https://app.example/cb');
    refused(await admin('clients', 'remove-redirect-uri', c.client_id, 'https://app.example/nope'), /no redirect URI/);

    const single = await createClient();
    refused(await admin('clients', 'remove-redirect-uri', single.client_id, 'https://app.example/cb'), /at least one redirect URI/);
  });

  it('generates, lists and revokes secrets, at most 2 active, shown once and stored hashed', async () => {
    const c = await createClient();
    const second = ok(await admin('secrets', 'generate', c.client_id));
    expect(second).toEqual({ secret_id: expect.any(Number), client_secret: expect.any(String), expires_at: null });
    expect(second.client_secret).toMatch(/^spcs_[0-9A-Za-z]{49}$/); // docs/credentials.md
    refused(await admin('secrets', 'generate', c.client_id), /already has 2 active secrets/);

    const listed = ok(await admin('secrets', 'list', c.client_id));
    expect(listed.secrets.map((s: { id: number }) => s.id)).toEqual([c.secret_id, second.secret_id]);
    expect(JSON.stringify(listed)).not.toContain(second.client_secret);

    expect(ok(await admin('secrets', 'revoke', c.client_id, String(c.secret_id)))).toEqual({ secret_id: c.secret_id, revoked: true });
    const [again, wrongClient, notANumber] = await Promise.all([
      admin('secrets', 'revoke', c.client_id, String(c.secret_id)),
      admin('secrets', 'revoke', (await createClient()).client_id, String(second.secret_id)),
      admin('secrets', 'revoke', c.client_id, 'abc'),
    ]);
    refused(again, /no active secret/);
    refused(wrongClient, /no active secret/);
    refused(notANumber, /not a secret id/);
    expect(ok(await admin('secrets', 'list', c.client_id)).secrets.map((s: { id: number }) => s.id)).toEqual([second.secret_id]);
    ok(await admin('secrets', 'generate', c.client_id));

    const stored = await cli.pg.db('oauth_client_secrets').where('client_id', c.client_id).pluck('secret_hash');
    expect(stored.join(' ')).not.toContain(second.client_secret);

    const pub = await createClient('--public');
    refused(await admin('secrets', 'generate', pub.client_id), /public client has no secrets/);
  });

  it('refuses secret ids that are no integer id (past 2^31-1 too) with a clear reason, never an SQL error', async () => {
    const c = await createClient();
    for (const id of ['99999999999', '2147483648', '0', '01', '-1', '1.5', '1e3', '0x10', '+1', ' 1', '１']) {
      const res = await admin('secrets', 'revoke', c.client_id, id);
      refused(res, /^error: not a secret id: ".*" \(secret ids are whole numbers from 1 to 2147483647; see secrets list\)$/);
    }
    refused(await admin('secrets', 'revoke', c.client_id, '2147483647'), /no active secret with id 2147483647/);
    expect(ok(await admin('secrets', 'list', c.client_id)).secrets).toHaveLength(1);
  });

  it('allows only the legal status transitions and records each with who, when and why', async () => {
    const c = await createClient();
    refused(await admin('clients', 'suspend', c.client_id), /^error: a pending client cannot become suspended$/);
    expect(ok(await admin('--reason', 'reviewed: ticket 42', 'clients', 'approve', c.client_id)).status).toBe('approved');
    refused(await admin('clients', 'reject', c.client_id), /^error: an approved client cannot become rejected$/);
    expect(ok(await admin('clients', 'suspend', c.client_id, '--reason', 'abuse report')).status).toBe('suspended');
    expect(ok(await admin('clients', 'approve', c.client_id)).status).toBe('approved');

    const trail = await cli.pg.db('audit_events').where('client_id', c.client_id).orderBy('id');
    expect(trail.map((e) => e.action)).toEqual(['client.created', 'client.approved', 'client.suspended', 'client.approved']);
    for (const e of trail) {
      expect(e.actor).toMatch(/^operator:/);
      expect(e.at).toBeInstanceOf(Date);
    }
    expect(trail[1].details).toMatchObject({ from: 'pending', reason: 'reviewed: ticket 42' });
    expect(trail[2].details).toMatchObject({ from: 'approved', reason: 'abuse report' });
  });

  it('has --help for every command', async () => {
    const commands = [
      ['migrate'], ['users', 'create'], ['users', 'set-admin'], ['users', 'list'], ['clients', 'create'], ['clients', 'rename'], ['clients', 'set-rate-limit'], ['clients', 'approve'], ['clients', 'reject'], ['clients', 'suspend'],
      ['clients', 'show'], ['clients', 'list'], ['clients', 'set-scopes'], ['clients', 'add-redirect-uri'],
      ['clients', 'remove-redirect-uri'], ['secrets', 'generate'], ['secrets', 'revoke'], ['secrets', 'list'],
    ];
    const results = await Promise.all(commands.map((c) => runAdmin([...c, '--help'], cli.env)));
    results.forEach((res, i) => {
      expect(res.code, commands[i]!.join(' ')).toBe(0);
      expect(res.stdout).toMatch(/^Usage: npm run --silent admin -- /);
      // The global options work after any subcommand, so its help lists them.
      expect(res.stdout, commands[i]!.join(' ')).toMatch(/Global Options:\n  --json .*\n  --reason <text>/);
    });
  });

  it('moving a client to the status it already has is a no-op success: unchanged, exit 0, no audit row', async () => {
    const approved = await createClient();
    ok(await admin('clients', 'approve', approved.client_id));
    const rejected = await createClient();
    ok(await admin('clients', 'reject', rejected.client_id));
    const suspended = await createClient();
    ok(await admin('clients', 'approve', suspended.client_id));
    ok(await admin('clients', 'suspend', suspended.client_id));
    for (const [command, c] of [['approve', approved], ['reject', rejected], ['suspend', suspended]] as const) {
      const before = await admin('clients', 'show', c.client_id);
      const trail = await cli.pg.db('audit_events').where('client_id', c.client_id).count<{ count: string }[]>('* as count');
      const again = ok(await admin('--reason', 'again', 'clients', command, c.client_id));
      const { secrets: _, ...shown } = ok(before);
      expect(again, command).toEqual(shown);
      expect(await cli.pg.db('audit_events').where('client_id', c.client_id).count<{ count: string }[]>('* as count')).toEqual(trail);
    }
  });

  it('clients list in text mode: a header and one line per client (id, status, kind, scopes, name)', async () => {
    const c = await createClient();
    const rs = ok(await admin('clients', 'create', '--resource-server', '--name', 'Gateway One'));
    const json = ok(await admin('clients', 'list'));
    const res = await runAdmin(['clients', 'list'], cli.env);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^ID +STATUS +KIND +SCOPES +NAME$/);
    expect(lines).toHaveLength(json.clients.length + 1);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${c.client_id} +pending +confidential +PROFILE_READ +App$`)));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${rs.client_id} +pending +resource_server +- +Gateway One$`)));
  });

  it('renames a client under the creation rules, in one transaction with a client.renamed audit row', async () => {
    const c = await createClient();
    const renamed = ok(await admin('clients', 'rename', c.client_id, '  Acme Calendar  ', '--reason', 'rebrand'));
    expect(renamed).toMatchObject({ client_id: c.client_id, name: 'Acme Calendar', status: 'pending', scopes: ['PROFILE_READ'] });
    const [event] = await cli.pg.db('audit_events').where({ client_id: c.client_id, action: 'client.renamed' });
    expect(event.details).toEqual({ from: 'App', to: 'Acme Calendar', reason: 'rebrand' });
    expect(event.actor).toMatch(/^operator:/);

    const audits = await cli.pg.db('audit_events').count<{ count: string }[]>('* as count');
    const [blank, long, hostile, missing] = await Promise.all([
      admin('clients', 'rename', c.client_id, '   '),
      admin('clients', 'rename', c.client_id, 'x'.repeat(101)),
      admin('clients', 'rename', c.client_id, 'Evil\nstatus: approved'),
      admin('clients', 'rename', 'no-such-client', 'Fine'),
    ]);
    refused(blank, /1 to 100 characters/);
    refused(long, /1 to 100 characters/);
    refused(hostile, /must not contain control or text-direction characters/);
    refused(missing, /no client/);
    expect((await row(c.client_id)).name).toBe('Acme Calendar');
    expect(await cli.pg.db('audit_events').count<{ count: string }[]>('* as count')).toEqual(audits);
  });
});
