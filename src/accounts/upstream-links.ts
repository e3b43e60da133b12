// Who an upstream account is here (docs/accounts.md): the user linked to its (issuer, subject), and
// only the first time, its verified e-mail — never the e-mail alone once an account is linked, nor
// an unverified one ever. UPSTREAM_LINKING=create also makes a user (without a password) when
// nobody here has that e-mail. The link and a made user are written in one transaction: a refusal
// or a failure leaves nothing behind.
import type { Knex } from 'knex';
import type { Db } from '../storage/db.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { findUserById, validateName, type User } from './store.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { recordAudit } from '../audit.ts';
import type { UpstreamAccount } from './upstream.ts';

export type Linking = 'existing' | 'create';

export type LinkOutcome = { user: User; created: boolean; linked: boolean } | { refused: string };

const UNIQUE_VIOLATION = '23505';
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

async function linkedUserId(db: Db | Knex.Transaction, issuer: string, subject: string): Promise<number | undefined> {
  const row = await db('upstream_links').where({ issuer, subject }).first('user_id');
  return row?.user_id;
}

/** A username free now: the e-mail's local part, made unique with a suffix when taken. */
async function freeUsername(trx: Knex.Transaction, email: string): Promise<string> {
  const base = (email.split('@')[0]!.toLowerCase().replace(/[^a-z0-9._-]/g, '') || 'user').replace(/^[._-]+/, '').slice(0, 50) || 'user';
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? base : `${base}-${n + 1}`;
    if (!(await trx('users').where('username', candidate).first('id'))) return candidate;
  }
}

/** The user this upstream account signs in as, or why not (the words for the person). */
export async function userForUpstream(users: CachedDb, account: UpstreamAccount, linking: Linking, upstreamName: string): Promise<LinkOutcome> {
  const { db } = users;
  const known = await linkedUserId(db, account.issuer, account.subject);
  if (known !== undefined) {
    const user = await findUserById(users, known);
    if (user) return { user, created: false, linked: false };
  }
  const email = account.email?.trim().toLowerCase();
  if (!email || !EMAIL.test(email)) return { refused: `Your account at ${upstreamName} has no e-mail address this site can use, and it is not linked to an account here. An operator can link it.` };
  if (!account.emailVerified) return { refused: `Your e-mail address at ${upstreamName} (${email}) is not verified there, so it cannot identify your account here. Verify it at ${upstreamName}, or ask an operator to link your account.` };

  try {
    const outcome = await db.transaction(async (trx): Promise<LinkOutcome> => {
      const existing = await trx('users').where('email', email).forUpdate().first('id');
      let userId: number;
      let created = false;
      if (existing) {
        const other = await trx('upstream_links').where({ user_id: existing.id, issuer: account.issuer }).first('subject');
        if (other) return { refused: `The account here for ${email} is linked to another account at ${upstreamName}. Sign in with that one, or ask an operator to change the link.` };
        userId = existing.id;
      } else {
        if (linking !== 'create') return { refused: `There is no account here for ${email}. Ask an operator to create one; then sign in with ${upstreamName} again.` };
        const username = await freeUsername(trx, email);
        let name = username;
        try {
          if (account.name) name = validateName(account.name);
        } catch {
          // An unusable name from the upstream: the username stands in (the user can change it).
        }
        const [row] = await trx('users').insert({ email, username, name, time_zone: 'UTC', password_hash: null }).returning('id');
        userId = row.id;
        created = true;
        await recordAudit(trx, { actor: `upstream:${account.issuer}`, action: 'user.created', userId, details: { source: 'upstream' } });
      }
      await trx('upstream_links').insert({ user_id: userId, issuer: account.issuer, subject: account.subject });
      await recordAudit(trx, { actor: `upstream:${account.issuer}`, action: 'user.upstream_linked', userId, details: { issuer: account.issuer, subject: account.subject, by: 'verified_email' } });
      return { user: { id: userId } as User, created, linked: true };
    });
    if ('refused' in outcome) return outcome;
    const user = await findUserById(users, outcome.user.id);
    if (!user) return { refused: 'The account here was removed meanwhile. Please try again.' };
    return { ...outcome, user };
  } catch (err) {
    // Two first sign-ins of the same account at once: the other one linked it; use its link.
    if ((err as { code?: string }).code !== UNIQUE_VIOLATION) throw err;
    const linked = await linkedUserId(db, account.issuer, account.subject);
    const user = linked === undefined ? undefined : await findUserById(users, linked);
    if (!user) return { refused: 'This sign-in met another one of the same account. Please try again.' };
    return { user, created: false, linked: false };
  }
}

/** `users link`: the operator names the upstream account of a user (replacing any link to that issuer). */
export async function linkUpstream(db: Db, userId: number, issuer: string, subject: string, actor: string): Promise<void> {
  if (!issuer.trim() || !subject.trim()) throw new InputError('both --issuer and --subject are needed');
  try {
    new URL(issuer);
  } catch {
    throw new InputError(`--issuer must be the upstream's issuer URL, got "${issuer}"`);
  }
  await db.transaction(async (trx) => {
    const holder = await trx('upstream_links').where({ issuer, subject }).first('user_id');
    if (holder && holder.user_id !== userId) throw new InputError(`that upstream account is linked to user ${holder.user_id}; unlink it there first`);
    await trx('upstream_links').where({ user_id: userId, issuer }).delete();
    await trx('upstream_links').insert({ user_id: userId, issuer, subject });
    await recordAudit(trx, { actor, action: 'user.upstream_linked', userId, details: { issuer, subject, by: 'operator' } });
  });
}

/** `users unlink`: the user's upstream links go; how many. */
export async function unlinkUpstream(db: Db, userId: number, actor: string): Promise<number> {
  return db.transaction(async (trx) => {
    const removed = await trx('upstream_links').where('user_id', userId).delete();
    if (removed === 0) throw new NotFoundError(`user ${userId} has no upstream link`);
    await recordAudit(trx, { actor, action: 'user.upstream_unlinked', userId, details: { links_removed: removed } });
    return removed;
  });
}
