// The developer settings pages as a person uses them, without a browser engine: sign in through
// the form, then post the pages' forms with this browser's CSRF token (the tests of each setting
// on the client page: DPoP, pushed requests, keys, optional scopes, the rest of the page).
import { expect } from 'vitest';
import { Browser, type Page } from './browser.ts';
import type { TestUser } from './oauth.ts';

export const DEVELOPER_PAGES = '/settings/developer/oauth-clients';

export function developerPages(serverUrl: () => string) {
  const url = (path: string) => `${serverUrl()}${path}`;
  return {
    url,
    /** A browser signed in as `who` through the sign-in form (landing on the developer pages). */
    async signIn(who: TestUser): Promise<Browser> {
      const browser = new Browser();
      const login = await browser.get(url(`/login?next=${encodeURIComponent(DEVELOPER_PAGES)}`));
      expect((await browser.submit(login, 'form[action="/login"]', { email: who.email, password: who.password })).status).toBe(303);
      return browser;
    },
    /** Posts a form of the pages with this browser's CSRF token (or `csrf`, to send another). */
    async post(browser: Browser, path: string, fields: Record<string, string | string[]>, csrf?: string): Promise<Page> {
      const token = csrf ?? ((await browser.get(url(DEVELOPER_PAGES))).$('input[name=csrf]').val() as string);
      const body = new URLSearchParams({ csrf: token });
      for (const [k, v] of Object.entries(fields)) for (const value of [v].flat()) body.append(k, value);
      return browser.request(url(path), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: body.toString() });
    },
  };
}
