// A review covers what it saw (issue 47 item 2; docs/agents.md "A document that changes"): approving
// a metadata-document or registered client records the scopes, redirect URIs and links it was
// shown. A document that later asks for more gets what was approved and no more until an
// administrator reviews the change (the scripts and the review page show it, approve or reject
// it); a narrower document applies at once; a document that fails or disappears loses nothing
// stored. On both stores (what the approval covers is read through the record cache, and a
// decision reaches the running server through its change feed). Documents are served by a real
// HTTP server on 127.0.0.1 (CIMD_ALLOW_LOOPBACK=true); `cimd.forget()` ends their cache time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser, operator } from './support/fixtures.ts';
import { Browser, type Page } from './support/browser.ts';
import { authorizeUrl, reachConsent, tokenRequest, type TestUser } from './support/oauth.ts';
import { AGENT_REDIRECT, agentCode, agentTokens, pkcePair, startDocumentServer, type DocumentServer } from './support/cimd.ts';
import { admin as runAdmin } from './support/processes.ts';
import { decideCimdClient } from '../src/review/review.ts';
import { usersSetAdmin } from '../src/admin/commands.ts';

const ENV = {
  CIMD_ALLOW_LOOPBACK: 'true',
  DYNAMIC_REGISTRATION: 'open',
  RATE_LIMIT_AUTH_FAILURES: '1000',
  CIMD_FETCHES_PER_ADDRESS_PER_MINUTE: '1000',
  CIMD_FETCHES_PER_ADDRESS_PER_HOUR: '1000',
  CIMD_FETCHES_PER_SITE_PER_MINUTE: '1000',
};
const OTHER_REDIRECT = 'https://agent.example.com/other-callback';
const POLICY = 'https://agent.example.com/privacy';
const HELD = /an administrator has not yet reviewed these scopes for this app/;

describe.each<Storage>(['redis', 'sql'])('a review covers what it saw (%s)', (storage) => {
  let server: TestServer;
  let docs: DocumentServer;
  let admin: TestUser & { id: number };
  beforeAll(async () => {
    [server, docs] = await Promise.all([startTestServer(storage, ENV), startDocumentServer()]);
    admin = await newUser(server, 'Admin');
    await usersSetAdmin(operator(server), admin.email);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), docs?.close()]);
  });

  const cli = (...args: string[]) => runAdmin(['--json', ...args], { DATABASE_URL: server.pg.url, ...(server.redis ? { REDIS_URL: server.redis.url } : {}) });
  const show = async (clientId: string) => {
    const res = await cli('clients', 'show', clientId);
    expect(res.code, res.stderr).toBe(0);
    return JSON.parse(res.stdout) as Record<string, unknown>;
  };

  /** A document the test changes at will: `doc.body` is served as it is at each fetch. */
  function changingAgent(path: string, fields: Record<string, unknown>) {
    const doc = { fields };
    const clientId = docs.serve(path, (url) => ({ body: { client_id: url, client_name: 'Changing Agent', token_endpoint_auth_method: 'none', redirect_uris: [AGENT_REDIRECT], ...doc.fields } }));
    return { clientId, set: (next: Record<string, unknown>) => ((doc.fields = next), server.system.cimd.forget()) };
  }

  /** Seen, used by one user, then approved: what its document says now is what the approval covers. */
  async function approvedAgent(path: string, fields: Record<string, unknown>) {
    const agent = changingAgent(path, fields);
    await agentTokens(server.url, agent.clientId, await newUser(server), 'PROFILE_READ');
    await decideCimdClient(operator(server), agent.clientId, 'approved', { actor: 'operator:test' });
    return agent;
  }

  /** The authorization request as a browser sends it, signed out: refusals come before sign-in. */
  function authorizationPage(clientId: string, scope: string, redirectUri = AGENT_REDIRECT): Promise<Page> {
    const { challenge } = pkcePair();
    return new Browser().get(authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, scope, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }));
  }

  /** invalid_scope, redirected to the app, with the reason. */
  async function expectScopeRefused(clientId: string, scope: string, reason: RegExp) {
    const page = await authorizationPage(clientId, scope);
    expect(page.status, page.html.slice(0, 300)).toBe(303);
    const back = new URL(page.location!);
    expect(back.origin + back.pathname).toBe(AGENT_REDIRECT);
    expect(back.searchParams.get('error')).toBe('invalid_scope');
    expect(back.searchParams.get('error_description')).toMatch(reason);
  }

  /** The error page that redirects nowhere (a redirect URI that cannot be trusted, an unusable client). */
  async function expectErrorPage(clientId: string, redirectUri: string, reason: RegExp) {
    const page = await authorizationPage(clientId, 'PROFILE_READ', redirectUri);
    expect(page.status, page.html.slice(0, 300)).toBe(400);
    expect(page.location).toBeUndefined();
    expect(page.$('body').text()).toMatch(reason);
  }

  /** Accepted: on to sign-in (no session), the request kept. */
  async function expectAccepted(clientId: string, scope: string, redirectUri = AGENT_REDIRECT) {
    const page = await authorizationPage(clientId, scope, redirectUri);
    expect(page.status, page.html.slice(0, 300)).toBe(303);
    expect(page.location).not.toMatch(/error=/);
    expect(new URL(page.location!, server.url).pathname).toMatch(/^\/(interaction|auth)/);
  }

  it('an approved document that asks for TEAM_/ORG_ write scopes gets only what was approved: asking for a new one is invalid_scope with the reason', async () => {
    const agent = await approvedAgent('/widens-scope.json', { scope: 'PROFILE_READ BOOKING_READ' });
    agent.set({ scope: 'PROFILE_READ BOOKING_READ TEAM_BOOKING_WRITE ORG_EVENT_TYPE_WRITE' });
    await expectScopeRefused(agent.clientId, 'PROFILE_READ TEAM_BOOKING_WRITE', HELD);
    await expectScopeRefused(agent.clientId, 'ORG_EVENT_TYPE_WRITE', HELD);
    // What was approved still works, as before the document changed.
    expect((await agentTokens(server.url, agent.clientId, await newUser(server), 'PROFILE_READ BOOKING_READ')).scope).toBe('PROFILE_READ BOOKING_READ');
  });

  it('an approved document that widens its scope and an authorization request without scope: the default is what was approved of it, no more', async () => {
    const agent = await approvedAgent('/widens-default.json', { scope: 'PROFILE_READ BOOKING_READ' });
    agent.set({ scope: 'PROFILE_READ BOOKING_READ SCHEDULE_READ' });
    expect((await agentTokens(server.url, agent.clientId, await newUser(server), undefined)).scope).toBe('PROFILE_READ BOOKING_READ');
    // Once the change is approved, the omitted scope asks for all of it (the consent's scopes, then the token's).
    await cli('clients', 'approve-change', agent.clientId);
    const { code, verifier } = await agentCode(server.url, agent.clientId, await newUser(server), undefined);
    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: agent.clientId, code_verifier: verifier });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.scope).toBe('PROFILE_READ BOOKING_READ SCHEDULE_READ');
  });

  it('a new redirect URI in an approved document is refused (the error page, no redirect) until reviewed; the approved one still works', async () => {
    const agent = await approvedAgent('/widens-redirects.json', { scope: 'PROFILE_READ' });
    agent.set({ scope: 'PROFILE_READ', redirect_uris: [AGENT_REDIRECT, OTHER_REDIRECT] });
    await expectErrorPage(agent.clientId, OTHER_REDIRECT, /redirect_uri/);
    await expectAccepted(agent.clientId, 'PROFILE_READ');
  });

  it('a narrower document applies at once, and asking again for what was approved needs no review; a document that fails, or lists none of the approved redirect URIs, loses nothing stored', async () => {
    const approvedFields = { scope: 'PROFILE_READ BOOKING_READ', redirect_uris: [AGENT_REDIRECT, OTHER_REDIRECT] };
    const agent = await approvedAgent('/narrows.json', approvedFields);
    const approval = (await server.system.db('cimd_clients').where('client_id', agent.clientId).first()).approved;
    // Narrower in scopes and redirect URIs, and wider in one scope: the removed ones go at once, the new one waits.
    agent.set({ scope: 'PROFILE_READ TEAM_BOOKING_WRITE', redirect_uris: [AGENT_REDIRECT] });
    await expectErrorPage(agent.clientId, OTHER_REDIRECT, /redirect_uri/);
    await expectScopeRefused(agent.clientId, 'PROFILE_READ BOOKING_READ', /^requested scope is not allowed$/);
    await expectScopeRefused(agent.clientId, 'TEAM_BOOKING_WRITE', HELD);
    // A removed scope with a held one: not all of it waits for review, so the plain refusal.
    await expectScopeRefused(agent.clientId, 'BOOKING_READ TEAM_BOOKING_WRITE', /^requested scope is not allowed$/);
    expect((await show(agent.clientId)).pending_change).toEqual({ add_scopes: ['TEAM_BOOKING_WRITE'], add_redirect_uris: [], set_links: null, status: 'pending' });
    // Only new redirect URIs: none approved is left to send users back to.
    agent.set({ scope: 'PROFILE_READ', redirect_uris: ['https://elsewhere.example/callback'] });
    await expectErrorPage(agent.clientId, 'https://elsewhere.example/callback', /none of the redirect URIs an administrator approved/);
    // Gone (a 404), then back as approved: nothing was lost, nothing needs review.
    docs.serve('/narrows.json', { status: 404 });
    server.system.cimd.forget();
    await expectErrorPage(agent.clientId, AGENT_REDIRECT, /invalid_client/);
    expect((await server.system.db('cimd_clients').where('client_id', agent.clientId).first()).approved).toEqual(approval);
    const back = changingAgent('/narrows.json', approvedFields);
    back.set(approvedFields);
    await expectAccepted(agent.clientId, 'PROFILE_READ BOOKING_READ', OTHER_REDIRECT);
    expect((await show(agent.clientId)).pending_change).toBeNull();
  });

  it('the administrator sees the pending change in the scripts and on the review page; approving it there makes it effective; a stale page decides nothing', async () => {
    const agent = await approvedAgent('/reviewed-change.json', { scope: 'PROFILE_READ' });
    agent.set({ scope: 'PROFILE_READ TEAM_BOOKING_WRITE', redirect_uris: [AGENT_REDIRECT, OTHER_REDIRECT], policy_uri: POLICY });
    await expectScopeRefused(agent.clientId, 'TEAM_BOOKING_WRITE', HELD); // read again: the change is seen
    const shown = await show(agent.clientId);
    expect(shown).toMatchObject({
      status: 'approved',
      scopes: ['PROFILE_READ', 'TEAM_BOOKING_WRITE'],
      approved: { scopes: ['PROFILE_READ'], redirect_uris: [AGENT_REDIRECT], links: { policy_uri: null, tos_uri: null } },
      pending_change: { add_scopes: ['TEAM_BOOKING_WRITE'], add_redirect_uris: [OTHER_REDIRECT], set_links: { policy_uri: POLICY, tos_uri: null }, status: 'pending' },
    });
    const listed = JSON.parse((await cli('clients', 'list-documents', '--status', 'approved')).stdout).clients;
    expect(listed).toContainEqual(expect.objectContaining({ client_id: agent.clientId, pending_change: shown.pending_change }));

    const browser = new Browser();
    const login = await browser.get(`${server.url}/login`);
    expect((await browser.submit(login, 'form[action="/login"]', { email: admin.email, password: admin.password })).status).toBe(303);
    let page = await browser.get(`${server.url}/admin/oauth-clients`);
    const row = () => page.$('#metadata-documents tr').filter((_, tr) => page.$(tr).text().includes(agent.clientId));
    expect(row().find('.pending-change').text()).toMatch(/Pending change[\s\S]*TEAM_BOOKING_WRITE[\s\S]*other-callback[\s\S]*privacy/);

    // The document asks for still more after the page was shown: approving what was shown decides nothing.
    agent.set({ scope: 'PROFILE_READ TEAM_BOOKING_WRITE ORG_BOOKING_WRITE', redirect_uris: [AGENT_REDIRECT, OTHER_REDIRECT], policy_uri: POLICY });
    await expectScopeRefused(agent.clientId, 'ORG_BOOKING_WRITE', HELD);
    let res = await browser.submit(page, `tr:contains("${agent.clientId}") button[value="approve_change"]`);
    expect(res.status).toBe(303);
    page = await browser.get(new URL(res.location!).href);
    expect(page.$('.alert, [role=alert]').text()).toContain('changed since it was shown');
    await expectScopeRefused(agent.clientId, 'TEAM_BOOKING_WRITE', HELD);

    res = await browser.submit(page, `tr:contains("${agent.clientId}") button[value="approve_change"]`);
    expect(res.status).toBe(303);
    page = await browser.get(new URL(res.location!).href);
    expect(page.$('.notice').text()).toContain('change approved');
    expect(row().find('.pending-change').length).toBe(0);
    // Effective at once on the running server: the new scopes and redirect URI.
    expect((await agentTokens(server.url, agent.clientId, await newUser(server), 'PROFILE_READ TEAM_BOOKING_WRITE ORG_BOOKING_WRITE')).scope).toBe('PROFILE_READ TEAM_BOOKING_WRITE ORG_BOOKING_WRITE');
    await expectAccepted(agent.clientId, 'PROFILE_READ', OTHER_REDIRECT);
    const audit = await server.system.db('audit_events').where('client_id', agent.clientId).orderBy('id').pluck('action');
    expect(audit.filter((a: string) => a.startsWith('cimd.'))).toEqual(['cimd.approved', 'cimd.change_approved']);
  });

  it('rejecting the change (scripts) keeps what was approved and is not asked again for the same; approve-change afterwards widens it', async () => {
    const agent = await approvedAgent('/rejected-change.json', { scope: 'PROFILE_READ' });
    agent.set({ scope: 'PROFILE_READ ORG_BOOKING_WRITE' });
    await expectScopeRefused(agent.clientId, 'ORG_BOOKING_WRITE', HELD);
    const rejected = await cli('--reason', 'not needed', 'clients', 'reject-change', agent.clientId);
    expect(rejected.code, rejected.stderr).toBe(0);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ status: 'approved', pending_change: { add_scopes: ['ORG_BOOKING_WRITE'], status: 'rejected' } });
    await expectScopeRefused(agent.clientId, 'ORG_BOOKING_WRITE', HELD);
    const again = await cli('clients', 'reject-change', agent.clientId);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toMatch(/no pending change/);
    const approved = await cli('clients', 'approve-change', agent.clientId);
    expect(approved.code, approved.stderr).toBe(0);
    expect(JSON.parse(approved.stdout)).toMatchObject({ approved: { scopes: ['PROFILE_READ', 'ORG_BOOKING_WRITE'] }, pending_change: null });
    expect((await agentTokens(server.url, agent.clientId, await newUser(server), 'ORG_BOOKING_WRITE')).scope).toBe('ORG_BOOKING_WRITE');
    const none = await cli('clients', 'approve-change', agent.clientId);
    expect(none.stderr).toMatch(/no pending change: its document asks for nothing beyond what was approved/);
    // Ids of no client, of any form: one clear refusal each, nothing changed.
    for (const [id, reason] of [[`${docs.url}/never-seen.json`, /has been seen/], ['no-such-client', /no client/], ['x'.repeat(5000), /no client/]] as const) {
      const refused = await cli('clients', 'approve-change', id);
      expect(refused.code, id.slice(0, 40)).toBe(1);
      expect(refused.stderr).toMatch(reason);
    }
  });

  it('the consent page: "Approved by" speaks only for what was approved — a new scope never reaches it, an unapproved link is not shown; both do once the change is approved', async () => {
    const agent = await approvedAgent('/consent-links.json', { scope: 'PROFILE_READ' });
    agent.set({ scope: 'PROFILE_READ TEAM_BOOKING_WRITE', policy_uri: POLICY });
    const consent = async (scope: string) => {
      const { challenge } = pkcePair();
      return reachConsent(new Browser(), server.url, { client_id: agent.clientId, redirect_uri: AGENT_REDIRECT, scope, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, await newUser(server));
    };
    // Asking for the new scope: the app hears invalid_scope; no page says "Approved by" beside it.
    const widened = await consent('PROFILE_READ TEAM_BOOKING_WRITE');
    expect(widened.$('.consent-review').text()).toBe('');
    expect(new URL(widened.location!).searchParams.get('error')).toBe('invalid_scope');
    let page = await consent('PROFILE_READ');
    expect(page.$('.consent-review').text()).toContain('Approved by');
    expect(page.$('.consent-codes code').map((_, c) => page.$(c).text()).get()).toEqual(['PROFILE_READ']);
    expect(page.$('.consent-links').length).toBe(0);
    expect((await cli('clients', 'approve-change', agent.clientId)).code).toBe(0);
    page = await consent('PROFILE_READ TEAM_BOOKING_WRITE');
    expect(page.$('.consent-review').text()).toContain('Approved by');
    expect(page.$('.consent-codes code').map((_, c) => page.$(c).text()).get()).toEqual(['PROFILE_READ', 'TEAM_BOOKING_WRITE']);
    expect(page.$('.consent-links a').attr('href')).toBe(POLICY);
  });

  it('a registered client (RFC 7591, no RFC 7592 management: its registration never changes): the approval records its scopes, redirect URIs and links', async () => {
    const res = await fetch(`${server.url}/v2/auth/oauth2/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Registered Agent', redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none', scope: 'PROFILE_READ TEAM_BOOKING_READ', policy_uri: POLICY }),
    });
    const clientId = ((await res.json()) as { client_id: string }).client_id;
    expect(res.status).toBe(201);
    expect((await show(clientId)).approved).toBeNull();
    const approved = await cli('clients', 'approve', clientId);
    expect(JSON.parse(approved.stdout)).toMatchObject({
      kind: 'registered',
      approved: { scopes: ['PROFILE_READ', 'TEAM_BOOKING_READ'], redirect_uris: [AGENT_REDIRECT], links: { policy_uri: POLICY, tos_uri: null } },
      pending_change: null,
    });
    expect((await agentTokens(server.url, clientId, await newUser(server), 'TEAM_BOOKING_READ')).scope).toBe('TEAM_BOOKING_READ');
  });

  it('clients approved before approvals recorded what they covered (migration 029) are taken to have approved their stored document, and no link', async () => {
    const { recordExistingApprovals } = await import('../migrations/029_cimd_approved_asks.ts');
    const agent = await approvedAgent('/before-029.json', { scope: 'PROFILE_READ', policy_uri: POLICY });
    await server.system.db('cimd_clients').where('client_id', agent.clientId).update({ approved: null });
    await recordExistingApprovals(server.system.db);
    expect((await show(agent.clientId)).approved).toEqual({ scopes: ['PROFILE_READ'], redirect_uris: [AGENT_REDIRECT], links: { policy_uri: null, tos_uri: null } });
  });
});
