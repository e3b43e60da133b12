// Hostile names: client and user names refuse control and text-direction characters (one shared
// rule), the scripts' text output prints such characters escaped whatever is stored, and
// `users create --password-stdin` keeps the password out of shell history.
import { describe, expect, it } from 'vitest';
import { runAdmin } from '../src/admin/program.ts';
import { authenticateUser, updateUserProfile, validateName } from '../src/accounts/store.ts';
import { validateClientName } from '../src/clients/validate.ts';
import { InputError } from '../src/errors.ts';
import { admin as runText, spawnAdmin, type CliResult } from './support/processes.ts';
import { expectRefusal, useAdminCli } from './support/admin-cli.ts';
import { uncachedRecords } from '../src/storage/record-cache.ts';
import { passwordHashing } from '../src/accounts/password.ts';

const cli = useAdminCli();
const admin = cli.json;
const ok = (res: CliResult) => {
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
};

/** The scripts in this process, with this text on standard input. */
async function withStdin(stdin: string, ...args: string[]): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(['--json', ...args], { env: cli.env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), stdin: async () => stdin });
  return { code, stdout, stderr };
}

async function counts() {
  const rows = await Promise.all(['users', 'oauth_clients', 'audit_events'].map((t) => cli.pg.db(t).count<{ count: string }[]>('* as count')));
  return rows.map((r) => r[0]!.count);
}

// C0, DEL, C1 (U+009B is an 8-bit CSI), line separators, bidi marks, embeddings, overrides, isolates.
const HOSTILE = ['\u0000', '\n', '\r', '\t', '\u001b', '\u007f', '\u0085', '\u009b', '\u2028', '\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'];

describe('hostile names', () => {
  it('client and user names refuse the same control and text-direction characters', () => {
    for (const c of HOSTILE) {
      const name = `Pay${c}fdp.exe`;
      expect(() => validateClientName(name), JSON.stringify(c)).toThrow(InputError);
      expect(() => validateName(name), JSON.stringify(c)).toThrow(InputError);
    }
    // Ordinary names, accents and other scripts (right-to-left ones included) still pass.
    for (const name of ['Acme Calendar', 'Café Ünïcödé', '日本語のアプリ', 'تطبيق', "O'Brien & Co. (beta)"]) {
      expect(validateClientName(name)).toBe(name);
      expect(validateName(name)).toBe(name);
    }
  });

  it('clients create refuses a name with a newline, ESC sequence or bidi override, storing nothing', async () => {
    const before = await counts();
    const names = ['Evil\nstatus: approved', 'Invoice\u202efdp.exe', '\x1b]0;pwned\x07', 'Evil\r\nstatus: approved', 'A\u2066B\u2069', 'C1\u009b31m'];
    const results = await Promise.all(names.map((name) => admin('clients', 'create', '--name', name, '--redirect-uri', 'https://evil.example/cb', '--scope', 'PROFILE_READ')));
    results.forEach((res) => expectRefusal(res, /client name must not contain control or text-direction characters/));
    expect(await counts()).toEqual(before);
  });

  it('text output prints a hostile stored name escaped: one line per field, no raw ESC', async () => {
    const { client_id: id } = ok(await admin('clients', 'create', '--name', 'Placeholder', '--redirect-uri', 'https://evil.example/cb', '--scope', 'PROFILE_READ'));
    // Written straight into the database, as before the rule existed.
    const hostile = 'Evil\nstatus: approved\x1b[2K\x1b]0;pwned\x07\u202eexe.pdf\u0085';
    await cli.pg.db('oauth_clients').where('id', id).update({ name: hostile });
    const escaped = 'Evil\\nstatus: approved\\x1b[2K\\x1b]0;pwned\\x07\\u202eexe.pdf\\x85';

    const [show, list] = await Promise.all([runText(['clients', 'show', id], cli.env), runText(['clients', 'list'], cli.env)]);
    for (const res of [show, list]) {
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    }
    // Every line is a field, a list item or a section: nothing forged in between.
    const lines = show.stdout.trimEnd().split('\n');
    for (const line of lines) expect(line).toMatch(/^ *(- )?[a-z_]+:( |$)|^ *- /);
    expect(lines).toContain(`name: ${escaped}`);
    expect(lines.filter((l) => /^ *(- )?status:/.test(l))).toEqual(['status: pending']);
    // The list is a table: a header and one line per client, the name escaped on its own row.
    const rows = list.stdout.trimEnd().split('\n');
    expect(rows).toHaveLength(1 + Number((await cli.pg.db('oauth_clients').count<{ count: string }[]>('* as count'))[0]!.count));
    expect(rows.filter((r) => r.startsWith(id))).toEqual([expect.stringMatching(/ pending +confidential +PROFILE_READ +/)]);
    expect(rows.find((r) => r.startsWith(id))!.endsWith(`  ${escaped}`)).toBe(true);

    // JSON output gives the stored value back exactly, with no raw control or bidi character.
    const json = await admin('clients', 'show', id);
    expect(json.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    expect(ok(json).name).toBe(hostile);
  });

  it('a refusal quoting hostile input stays one escaped line on stderr', async () => {
    const { client_id: id } = ok(await admin('clients', 'create', '--name', 'App', '--redirect-uri', 'https://app.example/cb', '--scope', 'PROFILE_READ'));
    const res = await admin('clients', 'add-redirect-uri', id, 'not a url\nstatus: approved\x1b[2J');
    expectRefusal(res, /^error: redirect URI must be an absolute URL: "not a url\\nstatus: approved\\x1b\[2J"$/);
    expect(res.stderr).not.toContain('\x1b');
  });

  it('user names refuse bidi and control characters on create and on profile change', async () => {
    const before = await counts();
    const names = ['Ann\u202enhoJ', 'Bob\u2067x\u2069', 'Eve\u200f', 'Mallory\u0085', 'Trudy\nstatus: admin'];
    const results = await Promise.all(names.map((name, i) => admin('users', 'create', '--email', `bidi${i}@example.com`, '--password', 'long-enough-1', '--name', name)));
    results.forEach((res) => expectRefusal(res, /no control or text-direction characters/));
    expect(await counts()).toEqual(before);

    const user = ok(await admin('users', 'create', '--email', 'plain@example.com', '--password', 'long-enough-1', '--name', 'Plain'));
    await expect(updateUserProfile({ db: cli.pg.db, records: uncachedRecords() }, user.id, { name: 'Plain\u202egnp.exe' })).rejects.toThrow(InputError);
    expect((await cli.pg.db('users').where('id', user.id).first()).name).toBe('Plain');
  });

  it('users create --password-stdin reads the first line of standard input', async () => {
    const user = ok(await withStdin('stdin-pass-2024\nignored second line\n', 'users', 'create', '--email', 'Stdin@Example.com', '--password-stdin'));
    expect(user).toMatchObject({ email: 'stdin@example.com', username: 'stdin' });
    expect(await authenticateUser({ db: cli.pg.db, passwords: passwordHashing() }, 'stdin@example.com', 'stdin-pass-2024')).toMatchObject({ id: user.id });
    expect(await authenticateUser({ db: cli.pg.db, passwords: passwordHashing() }, 'stdin@example.com', 'stdin-pass-2024\n')).toBeUndefined();
    // Windows line ends too.
    ok(await withStdin('crlf-pass-2024\r\n', 'users', 'create', '--email', 'crlf@example.com', '--password-stdin'));
    expect(await authenticateUser({ db: cli.pg.db, passwords: passwordHashing() }, 'crlf@example.com', 'crlf-pass-2024')).toBeDefined();
  });

  it('users create refuses an empty --password-stdin, both or neither password option, storing nothing', async () => {
    const before = await counts();
    expectRefusal(await withStdin('', 'users', 'create', '--email', 'empty@example.com', '--password-stdin'), /empty password/);
    expectRefusal(await withStdin('\nlater-line-pass\n', 'users', 'create', '--email', 'empty@example.com', '--password-stdin'), /empty password/);
    expectRefusal(await withStdin('stdin-pass-2024\n', 'users', 'create', '--email', 'both@example.com', '--password', 'argv-pass-2024', '--password-stdin'), /exactly one of --password or --password-stdin/);
    expectRefusal(await admin('users', 'create', '--email', 'neither@example.com'), /exactly one of --password or --password-stdin/);
    // Without a way to read standard input, --password-stdin is refused rather than hanging.
    expectRefusal(await admin('users', 'create', '--email', 'nostdin@example.com', '--password-stdin'), /no standard input/);
    expectRefusal(await withStdin('short\n', 'users', 'create', '--email', 'short@example.com', '--password-stdin'), /at least 8 characters/);
    expect(await counts()).toEqual(before);
  });

  it('the CLI process reads --password-stdin from a pipe', async () => {
    const res = await spawnAdmin(['--json', 'users', 'create', '--email', 'piped@example.com', '--password-stdin'], cli.env, 'piped-pass-2024\n');
    const user = ok(res);
    expect(await authenticateUser({ db: cli.pg.db, passwords: passwordHashing() }, 'piped@example.com', 'piped-pass-2024')).toMatchObject({ id: user.id });
  });
});
