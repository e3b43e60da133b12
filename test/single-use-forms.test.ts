// Issue 38 point 4: every state-changing form is single-use. The same form sent twice — a reload
// of "Your client secret" (the browser posts again), a second click on "Generate new secret" —
// makes one client or one secret; the second answer changes nothing and says it was already done.
// A refused form (400) can be corrected and sent again. With supertest, as a browser would post.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import supertest from 'supertest';
import * as cheerio from 'cheerio';
import { startTestServer, type Storage, type TestServer } from './support/server.ts';
import { newUser, REDIRECT } from './support/fixtures.ts';
import type { TestUser } from './support/oauth.ts';

const BASE = '/settings/developer/oauth-clients';

describe('single-use forms (redis storage)', () => {
  const storage: Storage = 'redis';
  let server: TestServer;
  let user: TestUser & { id: number };
  beforeAll(async () => {
    server = await startTestServer(storage);
    user = await newUser(server, 'Form Sender');
  });
  afterAll(() => server?.close());

  const csrfOf = (html: string) => cheerio.load(html)('input[name=csrf]').first().val() as string;

  async function signedIn() {
    const agent = supertest.agent(server.url);
    const login = await agent.get('/login');
    const res = await agent.post('/login').type('form').send({ csrf: csrfOf(login.text), email: user.email, password: user.password });
    expect(res.status).toBe(303);
    return agent;
  }

  /** The note a page shows after a redirect (the flash). */
  const noteOn = async (agent: ReturnType<typeof supertest.agent>, location: string) => cheerio.load((await agent.get(location)).text)('.alert, [role=status]').text();

  it('registering: the same form twice makes one client; the second answer says so and shows no secret', async () => {
    const agent = await signedIn();
    const form = { csrf: csrfOf((await agent.get(`${BASE}/new`)).text), name: `Once ${storage}`, kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' };
    const first = await agent.post(BASE).type('form').send(form);
    expect(first.status).toBe(200);
    expect(cheerio.load(first.text)('#secret').val()).toMatch(/\S{20,}/);

    const second = await agent.post(BASE).type('form').send(form);
    expect(second.status).toBe(303);
    const rows = await server.pg.db('oauth_clients').where('name', form.name);
    expect(rows).toHaveLength(1);
    expect(second.headers.location!).toBe(`${BASE}/${rows[0].id}`);
    const page = await agent.get(second.headers.location!);
    expect(cheerio.load(page.text)('#secret')).toHaveLength(0);
    expect(page.text).toContain('This form was already sent: the client was registered once');
    expect(await server.pg.db('oauth_client_secrets').where('client_id', rows[0].id)).toHaveLength(1);
  });

  it('"Generate new secret" twice makes one secret', async () => {
    const agent = await signedIn();
    const form = { csrf: csrfOf((await agent.get(`${BASE}/new`)).text), name: `Secrets ${storage}`, kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' };
    await agent.post(BASE).type('form').send(form);
    const id = (await server.pg.db('oauth_clients').where('name', form.name).first()).id as string;
    const generate = { csrf: csrfOf((await agent.get(`${BASE}/${id}`)).text), lifetime: '' };
    expect((await agent.post(`${BASE}/${id}/secrets`).type('form').send(generate)).status).toBe(200);
    const again = await agent.post(`${BASE}/${id}/secrets`).type('form').send(generate);
    expect(again.status).toBe(303);
    expect(await noteOn(agent, again.headers.location!)).toContain('This form was already sent: the secret was made once');
    expect(await server.pg.db('oauth_client_secrets').where('client_id', id).whereNull('revoked_at')).toHaveLength(2);
  });

  it('a refused form gives its claim back: corrected, the same form goes through once', async () => {
    const agent = await signedIn();
    const csrf = csrfOf((await agent.get(`${BASE}/new`)).text);
    const name = `Corrected ${storage}`;
    const bad = await agent.post(BASE).type('form').send({ csrf, name, kind: 'confidential', redirect_uris: 'not a url', scope: 'PROFILE_READ' });
    expect(bad.status).toBe(400);
    const good = await agent.post(BASE).type('form').send({ csrf, name, kind: 'confidential', redirect_uris: REDIRECT, scope: 'PROFILE_READ' });
    expect(good.status).toBe(200);
    expect(await server.pg.db('oauth_clients').where('name', name)).toHaveLength(1);
  });

  it('an administrator\'s decision sent twice is made once; the repeat says so', async () => {
    const agent = await signedIn();
    const csrf = csrfOf((await agent.get(`${BASE}/new`)).text);
    const name = `Reviewed ${storage}`;
    await agent.post(BASE).type('form').send({ csrf, name, kind: 'public', redirect_uris: REDIRECT, scope: 'PROFILE_READ' });
    const id = (await server.pg.db('oauth_clients').where('name', name).first()).id as string;

    // Not an administrator yet: the page says what to run.
    const refused = await agent.get('/admin/oauth-clients');
    expect(refused.status).toBe(403);
    expect(refused.text).toContain(`npm run --silent admin -- users set-admin ${user.email}`);

    await server.pg.db('users').where('id', user.id).update({ is_admin: true });
    const review = cheerio.load((await agent.get('/admin/oauth-clients')).text);
    const row = review(`form[action="/admin/oauth-clients/${id}/status"]`).first();
    const decision = { csrf: row.find('input[name=csrf]').val() as string, version: row.find('input[name=version]').val() as string, view: row.find('input[name=view]').val() as string ?? '', action: 'approve' };
    const first = await agent.post(`/admin/oauth-clients/${id}/status`).type('form').send(decision);
    expect(first.status).toBe(303);
    const second = await agent.post(`/admin/oauth-clients/${id}/status`).type('form').send(decision);
    expect(second.status).toBe(303);
    expect(await noteOn(agent, second.headers.location!)).toContain('This form was already sent: the decision was made then');
    expect(await server.pg.db('audit_events').where({ client_id: id, action: 'client.approved' })).toHaveLength(1);
  });
});
