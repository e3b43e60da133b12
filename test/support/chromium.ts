// Pages in a real browser (Debian's Chromium, driven by playwright-core): launch, people with their
// own cookie jars, and screenshots at a desktop and a phone size that also check, at the phone
// size, what a person would meet (a page wider than the screen, a covered heading).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from './processes.ts';
import { REDIRECT } from './fixtures.ts';
import { startTestServer, type TestServer } from './server.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(ROOT, 'test/artifacts');
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** Outside CI a machine without Chromium skips browser files (and says so); in CI they must run. */
export function browserTestsEnabled(what: string): boolean {
  const available = fs.existsSync(CHROMIUM);
  if (!available && process.env.CI !== 'true') console.warn(`${what} skipped: no Chromium at ${CHROMIUM} (apt-get install chromium)`);
  return available || process.env.CI === 'true';
}

export function launchChromium(): Promise<Browser> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A person with their own browser context; the test client's redirect URI answers with a stub page. */
export async function person(browser: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.route(`${REDIRECT}**`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<p>back at the app</p>' }));
  return { context, page: await context.newPage() };
}

/** Signs in on the pages' own form and waits for `next`. */
export async function signIn(page: Page, baseUrl: string, user: { email: string; password: string }, next: string): Promise<void> {
  await page.goto(`${baseUrl}/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${baseUrl}${next}`);
}

/**
 * Screenshots named `<series>-NN-<name>.png` and `…-phone.png` in test/artifacts/; at the phone
 * size the page must fit the width and keep its h1 visible (soft assertions).
 */
export function screenshots(series: string): (page: Page, name: string) => Promise<void> {
  let shot = 0;
  return async (page, name) => {
    shot += 1;
    const file = path.join(ARTIFACTS, `${series}-${String(shot).padStart(2, '0')}-${name}`);
    const size = page.viewportSize() ?? DESKTOP;
    await page.setViewportSize(DESKTOP);
    await page.screenshot({ path: `${file}.png`, fullPage: true });
    await page.setViewportSize(PHONE);
    await page.screenshot({ path: `${file}-phone.png`, fullPage: true });
    expect.soft(await layoutProblems(page), `${name} at ${PHONE.width}px`).toEqual([]);
    await page.setViewportSize(size);
  };
}

export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    window.scrollTo(0, 0);
    const problems: string[] = [];
    const { scrollWidth } = document.documentElement;
    if (scrollWidth > window.innerWidth) problems.push(`page is ${scrollWidth}px wide in a ${window.innerWidth}px window`);
    const h1 = document.querySelector('h1');
    if (!h1) return [...problems, 'no h1'];
    const box = h1.getBoundingClientRect();
    const header = document.querySelector('header');
    if (header && header.getBoundingClientRect().bottom > box.top) problems.push('the header reaches below the top of the h1');
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    if (!hit || !h1.contains(hit)) problems.push(`the h1 is covered by <${hit?.tagName.toLowerCase()} class="${hit?.className}">`);
    return problems;
  });
}

/**
 * Where a page leaves the one layout (views/assets/app.css, issue 50 item 8): its card in one of
 * the three widths (narrow, wide, full; or the window less its margins), the brand line atop it,
 * identifiers on one line, and a select as tall as the button beside it.
 */
export function oneLayoutProblems(page: Page, brand: string): Promise<string[]> {
  return page.evaluate((brand) => {
    const problems: string[] = [];
    const card = document.querySelector('main.card');
    if (!card) return ['no main.card'];
    const rem = parseFloat(getComputedStyle(document.documentElement).fontSize);
    const width = card.getBoundingClientRect().width;
    const allowed = [28, 56, 80].map((w) => w * rem);
    const fillsWindow = [2, 1].some((margin) => Math.abs(width - (document.documentElement.clientWidth - margin * rem)) < 1);
    if (!fillsWindow && !allowed.some((w) => Math.abs(width - w) < 1)) problems.push(`a card ${Math.round(width)} px wide (the widths are ${allowed.join(', ')} px)`);
    const line = card.querySelector(':scope > .brand');
    if (line?.textContent?.trim() !== brand) problems.push(`no brand line "${brand}" atop the card (found "${line?.textContent?.trim() ?? ''}")`);
    for (const id of document.querySelectorAll('code.id')) {
      const lineHeight = parseFloat(getComputedStyle(id).lineHeight) || parseFloat(getComputedStyle(id).fontSize) * 1.5;
      if (id.getBoundingClientRect().height > lineHeight * 1.5) problems.push(`an identifier broken over lines: ${id.textContent}`);
    }
    for (const select of document.querySelectorAll('.inline > select')) {
      const button = select.parentElement!.querySelector(':scope > button');
      const [a, b] = [select.getBoundingClientRect(), button?.getBoundingClientRect()];
      if (b && (Math.abs(a.height - b.height) > 2 || Math.abs(a.top - b.top) > 2)) problems.push(`a select (${Math.round(a.height)} px at ${Math.round(a.top)}) out of line with its button (${Math.round(b.height)} px at ${Math.round(b.top)})`);
    }
    return problems;
  }, brand);
}

/** WCAG contrast ratio of two computed colours (rgb()/rgba(), opaque). */
export function contrast(a: string, b: string): number {
  const luminance = (css: string) => {
    const linear = css.match(/\d+(\.\d+)?/g)!.slice(0, 3).map((c) => Number(c) / 255).map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return [0.2126, 0.7152, 0.0722].reduce((sum, weight, i) => sum + weight * linear[i]!, 0);
  };
  const [x, y] = [luminance(a), luminance(b)];
  return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
}

/**
 * A test server (Redis storage) and a browser for a describe block: started before its tests,
 * closed after them. Read `server` and `browser` inside tests, not at collection time.
 */
export function browserSession(env: Record<string, string> = {}): { readonly server: TestServer; readonly browser: Browser } {
  const session = {} as { server: TestServer; browser: Browser };
  beforeAll(async () => {
    session.server = await startTestServer('redis', env);
    session.browser = await launchChromium();
  });
  afterAll(async () => {
    await session.browser?.close();
    await session.server?.close();
  });
  return session;
}
