// One client directory (issue 47 item 1, src/directory/): the operator scripts and the review page
// find a client of any kind — the registry's, a metadata document's (its URL), a self-registered
// one (RFC 7591) — by one lookup, decide on it by one status machine, and give an id of no kind
// or of no client one clear answer each: an exit code and a line (a 4xx on the page), never a
// stack, "unexpected failure" or a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { newUser, operator, REDIRECT } from './support/fixtures.ts';
import { getMe, type TestUser } from './support/oauth.ts';
import { signedIn, type Page } from './support/browser.ts';
import { admin as runAdmin } from './support/processes.ts';
import { expectRefusal } from './support/admin-cli.ts';
import { startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { clientKinds, type KindName } from './support/client-kinds.ts';
import { clientsCreate, usersSetAdmin } from '../src/admin/commands.ts';

let server: TestServer;
let docs: DocumentServer;
let makeClient: ReturnType<typeof clientKinds>;
let reviewer: TestUser;

beforeAll(async () => {
  docs = await startDocumentServer();
  server = await startTestServer('redis', { CIMD_ALLOW_LOOPBACK: 'true', CIMD_MAX_USERS: '1000', DYNAMIC_REGISTRATION: 'open', RATE_LIMIT_AUTH_FAILURES: '1000' });
  makeClient = clientKinds(server, docs);
  reviewer = await newUser(server, 'Reviewer');
  await usersSetAdmin(operator(server), reviewer.email);
});
afterAll(async () => {
  await server?.close();
  await docs?.close();
});

/** The scripts against the server's database and Redis, as an operator runs them. */
const cli = (...args: string[]) => runAdmin(['--json', ...args], { DATABASE_URL: server.pg.url, REDIS_URL: server.redis!.url });
const json = async (...args: string[]) => {
  const result = await cli(...args);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

/** A client of `kind` that a user has tokens of (a document's client is known once used). */
async function usedClient(kind: KindName) {
  const client = await makeClient(kind);
  const tokens = await client.tokens();
  return { client, tokens };
}

describe('clients show, approve, reject, suspend and list take an id of every kind', () => {
  const cases = [
    { kind: 'registry public', shown: 'public', source: 'registry client' },
    { kind: 'metadata document, none', shown: 'metadata_document', source: 'metadata-document client' },
    { kind: 'registered, private_key_jwt', shown: 'registered', source: 'registered client' },
  ] as const satisfies ReadonlyArray<{ kind: KindName; shown: string; source: string }>;

  it.each(cases)('$kind: shown in its shape, listed with --kind all, and ended by its own decision', async ({ kind, shown }) => {
    const { client, tokens } = await usedClient(kind);
    expect(await json('clients', 'show', client.clientId)).toMatchObject({ client_id: client.clientId, kind: shown, status: kind === 'registry public' ? 'approved' : 'unreviewed' });
    const listed = (await json('clients', 'list', '--kind', 'all')).clients.map((c: { client_id: string }) => c.client_id);
    expect(listed).toContain(client.clientId);
    // Without --kind: the registry's clients, as before.
    const registry = (await json('clients', 'list')).clients.map((c: { client_id: string }) => c.client_id);
    expect(registry.includes(client.clientId)).toBe(kind === 'registry public');
    expect((await getMe(server.url, tokens.access_token)).status).toBe(200);
    // A registry client is suspended; the others have no suspension (rejecting them is it).
    const ended = await json('clients', kind === 'registry public' ? 'suspend' : 'reject', client.clientId);
    expect(ended).toMatchObject({ client_id: client.clientId, status: kind === 'registry public' ? 'suspended' : 'rejected' });
    expect((await getMe(server.url, tokens.access_token)).status).toBe(401);
    // And back by approve: a reinstatement, or an approval of the rejected client.
    expect(await json('clients', 'approve', client.clientId)).toMatchObject({ client_id: client.clientId, status: 'approved' });
  });

  it.each(cases.filter((c) => c.kind !== 'registry public'))('$kind: suspend is refused, naming its kind and what to do instead', async ({ kind, source }) => {
    const client = await makeClient(kind);
    await client.tokens();
    const refused = await cli('clients', 'suspend', client.clientId);
    expectRefusal(refused, new RegExp(`a ${source} is approved or rejected, not suspended: reject it`));
    expect((await json('clients', 'show', client.clientId)).status).toBe('unreviewed');
  });

  it.each(cases.filter((c) => c.kind !== 'registry public'))("$kind: the registry's own commands refuse it, naming its kind", async ({ kind, source }) => {
    const client = await makeClient(kind);
    await client.tokens();
    for (const args of [['clients', 'set-rate-limit', client.clientId, '10'], ['clients', 'rename', client.clientId, 'New name'], ['secrets', 'list', client.clientId], ['clients', 'delete', client.clientId, '--force']]) {
      expectRefusal(await cli(...args), new RegExp(`^error: ${args[0]} ${args[1]} is for registry clients: .* is a ${source}`));
    }
  });
});

describe('an id of no kind, or of no client: one clear refusal from every command that takes a client', () => {
  const COMMANDS: string[][] = [
    ['clients', 'show'],
    ['clients', 'approve'],
    ['clients', 'reject'],
    ['clients', 'suspend'],
    ['clients', 'approve-change'],
    ['clients', 'reject-change'],
    ['clients', 'delete'],
    ['clients', 'set-rate-limit', '?', '10'],
    ['secrets', 'list'],
  ];
  const withId = (command: string[], id: string) => (command.includes('?') ? command.map((a) => (a === '?' ? id : a)) : [...command, id]);

  it('garbage, over-long, control characters, other spellings of a known id, never-seen URLs', async () => {
    const registry = (await makeClient('registry public')).clientId;
    const registered = (await makeClient('registered, none')).clientId;
    const document = (await usedClient('metadata document, none')).client.clientId;
    const longUrl = `https://${'a'.repeat(3000)}.example/agent.json`;
    const ids: Array<[string, RegExp]> = [
      ['', /no client has an empty id/],
      ['x'.repeat(5000), /no client has an id of 5000 characters \(at most 2000\)/],
      [longUrl, new RegExp(`no client has an id of ${longUrl.length} characters`)],
      ['two words', /no client has an id with spaces or control characters/],
      ['line\nbreak', /no client has an id with spaces or control characters/],
      ['bell\u0007', /no client has an id with spaces or control characters/],
      ['no-such-client', /^error: no client with id no-such-client$/],
      [registry.toUpperCase(), /no client with id/],
      [registered.toLowerCase() === registered ? registered.toUpperCase() : registered.toLowerCase(), /no client with id/],
      [document.replace('http://', 'HTTP://'), /no client with id HTTP:.* has been seen \(a client_id is compared as written: its normal form is http:/],
      [`${document}/`, /no client with id .* has been seen/],
      [`${docs.url}/never-seen.json`, /no client with id .* has been seen/],
      ['../../etc/passwd', /no client with id/],
      ['\u202egnp.exe', /no client with id/],
    ];
    for (const command of COMMANDS) {
      for (const [id, reason] of ids) {
        const result = await cli(...withId(command, id));
        const what = `${command.join(' ')} ${JSON.stringify(id.slice(0, 40))}`;
        expect(result.code, what).toBe(1);
        expect(result.stderr, what).not.toMatch(/unexpected failure|\n\s+at /);
        expectRefusal(result, reason);
      }
    }
  });
});

describe('the review page answers a decision on an id of any form with a clear refusal, never a 500', () => {
  it('metadata-document decisions: NUL, over-long, garbage, a registry id, a never-seen URL', async () => {
    const document = (await usedClient('metadata document, none')).client.clientId;
    const registry = (await makeClient('registry public')).clientId;
    const browser = await signedIn(server.url, reviewer);
    const cases: Array<[string, RegExp]> = [
      ['nul\u0000byte', /no client has an id with spaces or control characters/],
      ['x'.repeat(5000), /no client has an id of 5000 characters/],
      ['garbage', /no client with id garbage/],
      [registry, /is a registry client: decide on it in the table above/],
      [`${docs.url}/never-seen.json`, /has been seen/],
    ];
    for (const action of ['approve', 'reject', 'approve_change', 'reject_change']) {
      for (const [id, reason] of cases) {
        const page: Page = await browser.get(`${server.url}/admin/oauth-clients`);
        const res = await browser.submit(page, `tr:contains("${document}") button[value="approve"]`, { action, client_id: id, reason: 'checked' });
        const what = `${action} ${JSON.stringify(id.slice(0, 30))}`;
        expect(res.status, what).toBe(303);
        const shown = await browser.get(new URL(res.location!).href);
        expect(shown.$('.alert, [role=alert]').text(), what).toMatch(reason);
      }
    }
    // Nothing was decided on the client the form came from.
    expect((await json('clients', 'show', document)).status).toBe('unreviewed');
  });

  it("the registry table's decisions and suspension page: an id of another kind is sent to its section, an id of none is no such client", async () => {
    const document = (await usedClient('metadata document, none')).client.clientId;
    const registered = (await makeClient('registered, none')).clientId;
    // A pending client: its row in the table has the decision form (approve, reject).
    const registry = (await clientsCreate(operator(server), { name: 'Pending app', redirectUri: [REDIRECT], scope: ['PROFILE_READ'] })).client_id;
    const browser = await signedIn(server.url, reviewer);
    // A NUL byte never reaches a route: the path itself is refused (400).
    const cases: Array<[string, RegExp | 400]> = [
      [document, /is a metadata-document client: decide on it under "Apps described by metadata documents"/],
      [registered, /is a registered client: decide on it under "Apps described by metadata documents"/],
      ['garbage', /There is no such client/],
      ['x'.repeat(1500), /There is no such client/],
      ['nul\u0000byte', 400],
    ];
    for (const [id, answer] of cases) {
      const page: Page = await browser.get(`${server.url}/admin/oauth-clients?status=pending&q=${registry}`);
      // The table's own form for a registry client, sent to another id's path.
      const path = `/admin/oauth-clients/${encodeURIComponent(id)}`;
      page.$(`form[action="/admin/oauth-clients/${registry}/status"]`).first().attr('action', `${path}/status`);
      const res = await browser.submit(page, `form[action="${path}/status"] button[value="approve"]`);
      const what = JSON.stringify(id.slice(0, 30));
      expect(res.status, what).toBe(answer === 400 ? 400 : 303);
      if (answer !== 400) expect((await browser.get(new URL(res.location!).href)).$('.alert, [role=alert]').text(), what).toMatch(answer);
      expect((await browser.get(`${server.url}${path}/suspend`)).status, what).toBe(answer === 400 ? 400 : 404);
    }
    expect((await json('clients', 'show', registry)).status).toBe('pending');
  });
});
