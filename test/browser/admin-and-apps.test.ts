// The admin review table and the apps with access page in a real browser: tabs with counts, the
// suspend confirmation, a refusal shown on its item; the apps page with "last used" and the revoke
// confirmation. Screenshots at both sizes go to test/artifacts/ (series "admin" and "apps").
import { describe, expect, it } from 'vitest';
import { getMe } from '../support/oauth.ts';
import { approvedClient, newUser, operator, REDIRECT, tokensFor } from '../support/fixtures.ts';
import { browserSession, browserTestsEnabled, person as newPerson, screenshots, signIn as signInAt } from '../support/chromium.ts';
import { usersSetAdmin } from '../../src/admin/commands.ts';
import { addRedirectUri, createClient, findClient } from '../../src/clients/service.ts';

describe.runIf(browserTestsEnabled('admin and apps pages'))('admin review and apps with access in a browser', () => {
  const session = browserSession();


  const signIn = (page: Parameters<typeof signInAt>[0], user: { email: string; password: string }, next: string) => signInAt(page, session.server.url, user, next);

  it('reviews clients in the table: tabs, the suspend confirmation, a refusal on its item', async () => {
    const screenshot = screenshots('admin');
    const [admin, dev] = await Promise.all([newUser(session.server, 'Ari Admin'), newUser(session.server, 'Dana Developer')]);
    await usersSetAdmin(operator(session.server), admin.email);
    const pending = async (name: string, redirectUris = [REDIRECT]) =>
      (await createClient(session.server.system, { name, kind: 'confidential', legacy: false, scopes: ['PROFILE_READ', 'BOOKING_READ'], redirectUris, ownerUserId: dev.id }, { actor: 'test' })).client.clientId;
    const changing = await pending('Meeting Notes Helper');
    await pending('Room Booker', [REDIRECT, 'https://rooms.example.com/oauth/callback']);
    await approvedClient(session.server, ['PROFILE_READ', 'SCHEDULE_READ'], 'Team Planner');

    const { context, page } = await newPerson(session.browser);
    await signIn(page, admin, '/admin/oauth-clients');
    expect(await page.locator('.tabs a[aria-current=page]').textContent()).toContain('Pending 2');
    expect(await page.locator('tr.item', { hasText: 'Room Booker' }).getByRole('cell', { name: dev.email }).count()).toBe(1);
    await screenshot(page, 'table-with-tabs');

    await page.locator('.tabs').getByRole('link', { name: /Approved/ }).click();
    await page.locator('tr.item', { hasText: 'Team Planner' }).getByRole('link', { name: 'Suspend…' }).click();
    await page.getByRole('heading', { name: 'Suspend Team Planner?' }).waitFor();
    await screenshot(page, 'suspend-confirmation');
    await page.getByLabel(/Reason/).fill('Reported for sending spam');
    await page.getByRole('button', { name: 'Suspend Team Planner' }).click();
    await page.waitForURL(`${session.server.url}/admin/oauth-clients?status=approved`);
    expect(await page.locator('.notice').textContent()).toContain('Team Planner: suspended');

    // The owner changes a client while the administrator looks at it: Approve is refused on that item.
    await page.locator('.tabs').getByRole('link', { name: /Pending/ }).click();
    await addRedirectUri(session.server.system, changing, 'https://notes.example.com/elsewhere', { actor: 'test' });
    await page.locator('tr.item', { hasText: 'Meeting Notes Helper' }).getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(`${session.server.url}/admin/oauth-clients`);
    const refusal = page.locator('tr.item.refused', { hasText: 'Meeting Notes Helper' }).locator('.alert');
    expect(await refusal.textContent()).toContain('changed since you opened the page');
    expect((await findClient(session.server.system.db, changing))!.status).toBe('pending');
    await screenshot(page, 'refusal-on-item');
    await context.close();
  });

  it('shows when each app last used its access, and confirms before revoking', async () => {
    const screenshot = screenshots('apps');
    const user = await newUser(session.server, 'Uma User');
    const client = await approvedClient(session.server, ['PROFILE_READ', 'BOOKING_READ'], 'Calendar Sync Pro');
    const tokens = await tokensFor(session.server, client, user, 'PROFILE_READ BOOKING_READ');
    await expect.poll(async () => (await session.server.pg.db('user_grants').where({ client_id: client.client_id }).first())?.last_used_at ?? null).not.toBeNull();

    const { context, page } = await newPerson(session.browser);
    await signIn(page, user, '/settings/connected-apps');
    const app = page.locator('.item', { hasText: 'Calendar Sync Pro' });
    expect(await app.locator('.last-used').textContent()).toMatch(/^Last used \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC$/);
    await screenshot(page, 'last-used');

    await app.getByRole('link', { name: /Revoke access of Calendar Sync Pro/ }).click();
    await page.getByRole('heading', { name: 'Revoke access of Calendar Sync Pro?' }).waitFor();
    await screenshot(page, 'revoke-confirmation');
    await page.getByRole('button', { name: 'Revoke access' }).click();
    await page.waitForURL(`${session.server.url}/settings/connected-apps`);
    expect(await page.locator('.notice').textContent()).toContain('Access revoked for Calendar Sync Pro');
    expect((await getMe(session.server.url, tokens.access_token)).status).toBe(401);
    await context.close();
  });
});
