// The operator scripts' actions (CONTRACT 5): plain functions over the service layer that return
// the JSON documents the CLI prints. Tests call these same functions.
import type { Db } from '../storage/db.ts';
import { migrateLatest } from '../storage/db.ts';
import { createUser } from '../accounts/store.ts';
import { createClient, getClient, listActiveSecrets, type ClientRecord, type ClientStatus } from '../clients/store.ts';
import { setClientStatus, type ClientDeps } from '../clients/lifecycle.ts';
import { parseScopeArgs } from '../oauth/scopes.ts';

export function clientJson(client: ClientRecord) {
  return {
    client_id: client.clientId,
    name: client.name,
    status: client.status,
    kind: client.kind,
    legacy: client.legacy,
    scopes: client.scopes,
    redirect_uris: client.redirectUris,
    created_at: client.createdAt.toISOString(),
    updated_at: client.updatedAt.toISOString(),
  };
}

export async function migrate(db: Db) {
  const applied = await migrateLatest(db);
  return { applied };
}

export interface UsersCreateOptions {
  email: string;
  password: string;
  name?: string;
  username?: string;
  timeZone?: string;
}

export async function usersCreate(db: Db, options: UsersCreateOptions) {
  const user = await createUser(db, options);
  return { id: user.id, email: user.email, username: user.username, name: user.name, time_zone: user.timeZone };
}

export interface ClientsCreateOptions {
  name: string;
  redirectUri: string[];
  scope?: string[];
  public?: boolean;
  legacy?: boolean;
}

export async function clientsCreate(db: Db, options: ClientsCreateOptions) {
  const { client, secret } = await createClient(db, {
    name: options.name,
    redirectUris: options.redirectUri,
    scopes: parseScopeArgs(options.scope ?? []),
    kind: options.public ? 'public' : 'confidential',
    legacy: Boolean(options.legacy),
  });
  return {
    ...clientJson(client),
    ...(secret ? { client_secret: secret.value, secret_id: secret.id } : {}),
  };
}

export async function clientsSetStatus(deps: ClientDeps, clientId: string, status: ClientStatus) {
  return clientJson(await setClientStatus(deps, clientId, status));
}

export async function clientsShow(db: Db, clientId: string) {
  const client = await getClient(db, clientId);
  const secrets = await listActiveSecrets(db, clientId);
  return {
    ...clientJson(client),
    secrets: secrets.map((s) => ({ id: s.id, created_at: s.createdAt.toISOString(), last_used_at: s.lastUsedAt?.toISOString() ?? null })),
  };
}
