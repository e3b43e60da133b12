// A scripted user agent: real HTTP, a cookie jar, manual redirects, and HTML forms read with cheerio.
import * as cheerio from 'cheerio';
import { CookieJar } from 'tough-cookie';

export interface Page {
  status: number;
  url: string;
  location?: string;
  html: string;
  $: cheerio.CheerioAPI;
  headers: Headers;
}

export class Browser {
  readonly jar = new CookieJar();

  async request(url: string, init: RequestInit = {}): Promise<Page> {
    const headers = new Headers(init.headers);
    const cookie = await this.jar.getCookieString(url);
    if (cookie) headers.set('cookie', cookie);
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const setCookie of res.headers.getSetCookie()) await this.jar.setCookie(setCookie, url);
    const html = await res.text();
    const location = res.headers.get('location') ?? undefined;
    return { status: res.status, url, html, $: cheerio.load(html), headers: res.headers, ...(location ? { location: new URL(location, url).href } : {}) };
  }

  get(url: string): Promise<Page> {
    return this.request(url);
  }

  /** Follows redirects while they stay on `origin`; returns the last page or the off-site redirect. */
  async follow(url: string, origin: string): Promise<Page> {
    let page = await this.get(url);
    for (let hops = 0; page.location && page.location.startsWith(origin) && hops < 10; hops++) {
      page = await this.get(page.location);
    }
    return page;
  }

  /** Submits the form containing `selector` (a form or a button in it), as a browser would. */
  async submit(page: Page, selector: string, fields: Record<string, string> = {}): Promise<Page> {
    const target = page.$(selector).first();
    if (target.length === 0) throw new Error(`no ${selector} on ${page.url}:\n${page.html}`);
    const form = target.is('form') ? target : target.closest('form');
    const body = new URLSearchParams();
    // As a browser does: the form's own inputs, and those outside it that name it (form="id").
    const id = form.attr('id');
    const inputs = id ? form.find('input[name]').add(page.$(`input[name][form="${id}"]`)) : form.find('input[name]');
    inputs.each((_, el) => {
      const input = page.$(el);
      // As a browser does: an unticked checkbox or radio button sends nothing.
      if (input.is('[type=checkbox], [type=radio]') && input.attr('checked') === undefined) return;
      body.set(input.attr('name')!, input.attr('value') ?? '');
    });
    if (target.is('button') && target.attr('name')) body.set(target.attr('name')!, target.attr('value') ?? '');
    for (const [k, v] of Object.entries(fields)) body.set(k, v);
    const action = (target.is('button') && target.attr('formaction')) || form.attr('action') || page.url;
    return this.request(new URL(action, page.url).href, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: body.toString(),
    });
  }
}

/** A browser signed in to the pages (the /login form) as `user`. */
export async function signedIn(base: string, user: { email: string; password: string }): Promise<Browser> {
  const browser = new Browser();
  const login = await browser.get(`${base}/login`);
  const res = await browser.submit(login, 'form[action="/login"]', { email: user.email, password: user.password });
  if (res.status !== 303) throw new Error(`signing in as ${user.email} answered ${res.status}`);
  return browser;
}
