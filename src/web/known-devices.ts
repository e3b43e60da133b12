// "This browser signed in to this account before": the mark that lets an account's owner past the
// sign-in limits others' failures set (src/web/sign-in-limits.ts). Set only after a successful
// sign-in, never by showing a form. The cookie holds a random id and, for each account that signed
// in from it (the last few), an HMAC of (id, account) under the cookie keys: nothing a reader could
// use, nothing anyone can forge, and an id copied from one browser proves nothing for other accounts.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import { cookieName, cookieOptions } from '../http/cookies.ts';
import { POLICY } from '../settings.ts';

const COOKIE = 'known_device';
const DAYS = POLICY.KNOWN_DEVICE_DAYS.value;
/** Accounts remembered per browser (the most recent ones). */
const MAX_ACCOUNTS = POLICY.KNOWN_DEVICE_ACCOUNTS.value;

const subject = (id: string, email: string) => `known-device|${id}|${email.trim().toLowerCase()}`;
/** The tag under each cookie key, the current one first (old keys still verify while they rotate out). */
const tags = (ctx: Context, data: string) => (ctx.app.keys as string[]).map((key) => createHmac('sha256', key).update(data).digest('base64url'));
const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

function read(ctx: Context): { id: string; tags: string[] } | undefined {
  const value = ctx.cookies.get(cookieName(ctx, COOKIE), { signed: true });
  const [id, ...tags] = value?.split('.') ?? [];
  return id ? { id, tags } : undefined;
}

/** This browser's device id when it signed in to this account before; otherwise undefined. */
export function knownDeviceFor(ctx: Context, email: string): string | undefined {
  const device = read(ctx);
  if (!device || !email) return undefined;
  const valid = tags(ctx, subject(device.id, email));
  return device.tags.some((tag) => valid.some((v) => same(tag, v))) ? device.id : undefined;
}

/** After a successful sign-in: this browser is now known for this account. */
export function markKnownDevice(ctx: Context, email: string): void {
  const device = read(ctx) ?? { id: randomBytes(16).toString('base64url'), tags: [] };
  const tag = tags(ctx, subject(device.id, email))[0]!;
  const kept = [tag, ...device.tags.filter((t) => t !== tag)].slice(0, MAX_ACCOUNTS);
  ctx.cookies.set(cookieName(ctx, COOKIE), [device.id, ...kept].join('.'), cookieOptions(ctx, { expires: new Date(Date.now() + DAYS * 86_400_000) }));
}
