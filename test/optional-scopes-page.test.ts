// The developer page's optional-scopes form (issue 35 point 6, data side): the owner marks which
// approved scopes users may untick; refusals change nothing; others cannot.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { developerPages } from './support/developer-pages.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import type { TestUser } from './support/oauth.ts';
import { newUser, REDIRECT } from './support/fixtures.ts';

const BASE = '/settings/developer/oauth-clients';
let server: TestServer;
let dev: TestUser & { id: number };
let other: TestUser & { id: number };

beforeAll(async () => {
  server = await startTestServer('redis', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' });
  [dev, other] = await Promise.all([newUser(server, 'Dev'), newUser(server, 'Other')]);
});
afterAll(() => server?.close());

const { url, signIn, post } = developerPages(() => server.url);
const stored = (id: string) => server.pg.db('oauth_clients').where('id', id).first('scopes', 'optional_scopes');



describe('optional scopes on the developer page', () => {
  it('the owner marks scopes optional and unmarks them; refusals and other users change nothing', async () => {
    const browser = await signIn(dev);
    const created = await post(browser, BASE, { name: 'Granular App', kind: 'public', redirect_uris: REDIRECT, scope: ['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ'] });
    expect(created.status).toBe(303);
    const id = (await server.pg.db('oauth_clients').where('name', 'Granular App').first('id')).id as string;
    const path = `${BASE}/${id}`;

    const page = await browser.get(url(path));
    expect(page.$('form.optional-scopes input[name=optional_scope]').map((_, el) => page.$(el).val()).get()).toEqual(['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ']);

    const saved = await post(browser, `${path}/optional-scopes`, { optional_scope: ['BOOKING_READ', 'SCHEDULE_READ'] });
    expect(saved.status).toBe(303);
    expect((await stored(id)).optional_scopes).toEqual(['BOOKING_READ', 'SCHEDULE_READ']);
    const shown = await browser.get(url(path));
    expect(shown.$('form.optional-scopes input:checked').map((_, el) => shown.$(el).val()).get()).toEqual(['BOOKING_READ', 'SCHEDULE_READ']);

    const all = await post(browser, `${path}/optional-scopes`, { optional_scope: ['PROFILE_READ', 'BOOKING_READ', 'SCHEDULE_READ'] });
    expect(all.status).toBe(400);
    expect(all.$('#optional-error').text()).toMatch(/must stay required/);
    const foreign = await post(browser, `${path}/optional-scopes`, { optional_scope: ['ORG_PROFILE_READ'] });
    expect(foreign.status).toBe(400);
    expect(foreign.$('#optional-error').text()).toMatch(/among the client's scopes/);
    const forged = await post(browser, `${path}/optional-scopes`, { optional_scope: [] }, 'not-the-token');
    expect(forged.status).toBe(403);
    const stranger = await signIn(other);
    expect((await post(stranger, `${path}/optional-scopes`, { optional_scope: [] })).status).toBe(404);
    expect((await stored(id)).optional_scopes).toEqual(['BOOKING_READ', 'SCHEDULE_READ']);

    expect((await post(browser, `${path}/optional-scopes`, {})).status).toBe(303);
    expect((await stored(id)).optional_scopes).toEqual([]);
  });
});

describe('requiring DPoP on the developer page (RFC 9449 5.2, docs/dpop.md)', () => {
  it('the owner turns it on and off; the provider then requires a proof; others cannot', async () => {
    const browser = await signIn(dev);
    expect((await post(browser, BASE, { name: 'Key-bound App', kind: 'public', redirect_uris: REDIRECT, scope: ['PROFILE_READ'] })).status).toBe(303);
    const id = (await server.pg.db('oauth_clients').where('name', 'Key-bound App').first('id')).id as string;
    const path = `${BASE}/${id}`;
    const setting = async () => (await server.pg.db('oauth_clients').where('id', id).first('dpop_bound_access_tokens')).dpop_bound_access_tokens as boolean;
    expect((await browser.get(url(path))).$('form.dpop input[name=dpop]').is(':checked')).toBe(false);

    expect((await post(browser, `${path}/dpop`, { dpop: 'on' })).status).toBe(303);
    expect(await setting()).toBe(true);
    expect((await browser.get(url(path))).$('form.dpop input[name=dpop]').is(':checked')).toBe(true);
    // What the provider reads of the client (src/oauth/client-adapter.ts).
    expect((await server.system.provider.Client.find(id))?.dpopBoundAccessTokens).toBe(true);

    expect((await post(browser, `${path}/dpop`, { dpop: 'on' }, 'not-the-token')).status).toBe(403);
    expect((await post(await signIn(other), `${path}/dpop`, {})).status).toBe(404);
    expect(await setting()).toBe(true);

    expect((await post(browser, `${path}/dpop`, {})).status).toBe(303);
    expect(await setting()).toBe(false);
    expect((await server.system.provider.Client.find(id))?.dpopBoundAccessTokens).toBe(false);
  });
});
