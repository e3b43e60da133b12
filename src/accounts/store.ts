// Users: creation (operator script, demo seed), look-up for the provider and /v2/me, sign-in.
import type { Db } from '../storage/db.ts';
import { preparedRead } from '../storage/prepared.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { PasswordHashingBusy, type Admission, type PasswordHashing } from './password.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { hasUnsafeText } from '../text.ts';
import { parseIntegerId } from '../ids.ts';
import { POLICY } from '../settings.ts';

export interface User {
  id: number;
  email: string;
  username: string;
  name: string;
  timeZone: string;
}

interface UserRow {
  id: number;
  email: string;
  username: string;
  name: string;
  time_zone: string;
  /** Null for a user made by an upstream sign-in (migrations/035): no password signs in as them. */
  password_hash: string | null;
}

const COLUMNS = ['id', 'email', 'username', 'name', 'time_zone'];

function toUser(row: Omit<UserRow, 'password_hash'>): User {
  return { id: row.id, email: row.email, username: row.username, name: row.name, timeZone: row.time_zone };
}

export interface NewUser {
  email: string;
  password: string;
  name?: string | undefined;
  username?: string | undefined;
  timeZone?: string | undefined;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const USERNAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const MIN_PASSWORD_LENGTH = POLICY.MIN_PASSWORD_LENGTH.value;

export function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

export function validateName(value: string): string {
  const name = value.trim();
  if (!name || name.length > 200) throw new InputError('the name must be 1 to 200 printable characters');
  // Control characters would corrupt logs, headers and pages that show the name; text-direction
  // characters would make it display as something else. Same rule as client names.
  if (hasUnsafeText(name)) throw new InputError('the name must be printable: no control or text-direction characters');
  return name;
}

export function validateTimeZone(value: string): string {
  if (!isValidTimeZone(value)) throw new InputError(`not an IANA time zone: "${value}"`);
  return value;
}

export function validateNewUser(input: NewUser): Required<NewUser> {
  const email = input.email.trim().toLowerCase();
  if (/[\u0000-\u001f]/.test(input.password + email)) throw new InputError('control characters are not allowed in the email or password');
  if (!EMAIL.test(email) || email.length > 254) throw new InputError(`not a valid email address: "${input.email}"`);
  if (input.password.length < MIN_PASSWORD_LENGTH) throw new InputError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  const username = (input.username ?? email.split('@')[0]!).toLowerCase();
  if (!USERNAME.test(username)) throw new InputError(`not a valid username: "${username}" (a–z, 0–9, '.', '_', '-'; up to 63 characters)`);
  const name = validateName(input.name ?? username);
  const timeZone = validateTimeZone(input.timeZone ?? 'UTC');
  return { email, password: input.password, username, name, timeZone };
}

/** What creating a user and checking a password need: the database and the password hashing (built in system.ts). */
export interface PasswordDeps {
  db: Db;
  passwords: PasswordHashing;
}

export async function createUser({ db, passwords }: PasswordDeps, input: NewUser): Promise<User> {
  const user = validateNewUser(input);
  const taken = await db('users').where('email', user.email).orWhere('username', user.username).first('email');
  if (taken) {
    throw new InputError(taken.email === user.email ? `a user with email ${user.email} exists` : `the username ${user.username} is taken`);
  }
  const [row] = await db('users')
    .insert({
      email: user.email,
      username: user.username,
      name: user.name,
      time_zone: user.timeZone,
      password_hash: await passwords.hash(user.password),
    })
    .returning(COLUMNS);
  return toUser(row);
}

// On the path of every refresh and /v2/me.
const userById = preparedRead<Omit<UserRow, 'password_hash'>, [number]>('user_by_id', (db, id) => db('users').where('id', id).first(COLUMNS));

export async function findUserById({ db, records }: CachedDb, id: string | number): Promise<User | undefined> {
  const numeric = parseIntegerId(String(id));
  if (numeric === undefined) return undefined;
  return records.read('user', String(numeric), async () => {
    const [row] = await userById(db, numeric);
    return row ? toUser(row) : undefined;
  });
}

export interface ProfileChanges {
  name?: string;
  timeZone?: string;
}

/** Applies validated profile changes; nothing changes when any of them is invalid. */
export async function updateUserProfile(users: CachedDb, id: string | number, changes: ProfileChanges): Promise<User | undefined> {
  const { db, records } = users;
  const update: Record<string, unknown> = {};
  if (changes.name !== undefined) update.name = validateName(changes.name);
  if (changes.timeZone !== undefined) update.time_zone = validateTimeZone(changes.timeZone);
  const existing = await findUserById(users, id);
  if (!existing) return undefined;
  const [row] = await db('users').where('id', existing.id).update({ ...update, updated_at: db.fn.now() }).returning(COLUMNS);
  await records.announce(db, 'user', existing.id);
  return toUser(row);
}

export async function isAdmin(db: Db, userId: number): Promise<boolean> {
  const row = await db('users').where('id', userId).first('is_admin');
  return row?.is_admin === true;
}

/** Makes the user with this email an administrator (operator script `users set-admin`). */
export async function setAdmin({ db, records }: CachedDb, email: string, admin: boolean): Promise<User> {
  if (email.includes('\0')) throw new NotFoundError(`no user with email ${JSON.stringify(email)}`);
  const [row] = await db('users').where('email', email.trim().toLowerCase()).update({ is_admin: admin, updated_at: db.fn.now() }).returning(COLUMNS);
  if (!row) throw new NotFoundError(`no user with email ${email}`);
  await records.announce(db, 'user', row.id);
  return toUser(row);
}

/** The user for these credentials, or undefined; takes the same time whether or not the email exists. */
export async function authenticateUser({ db, passwords }: PasswordDeps, email: string, password: string, admission?: Admission): Promise<User | undefined> {
  // A NUL byte cannot be in any stored email (and PostgreSQL text refuses it): no such account.
  const row: UserRow | undefined = email.includes('\0') ? undefined : await db('users').where('email', email.trim().toLowerCase()).first();
  const ok = await passwords.verify(password, row?.password_hash ?? (await passwords.dummyHash()), admission);
  if (!row?.password_hash || !ok) return undefined;
  // A hash made at an older, lower cost is replaced now that we have the password.
  // (Skipped while hashing is busy: the sign-in stands, the next one rehashes.)
  if (passwords.needsRehash(row.password_hash)) {
    try {
      await db('users').where('id', row.id).update({ password_hash: await passwords.hash(password, admission), updated_at: db.fn.now() });
    } catch (err) {
      if (!(err instanceof PasswordHashingBusy)) throw err;
    }
  }
  return toUser(row);
}
