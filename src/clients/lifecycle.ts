// Client status changes with their effect on what the client already holds.
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import { changeClientStatus, type Actor, type ClientRecord, type ClientStatus } from './store.ts';

export interface ClientDeps {
  db: Db;
  artifacts: ClientArtifacts;
}

// A token request that read the client as approved just before the change may still save its
// tokens just after the first sweep; a second sweep shortly after catches those.
const SECOND_SWEEP_MS = 1000;

/**
 * A client that stops being approved loses every code, token and grant at once: bearer
 * verification then needs only the token lookup. Reinstating does not bring them back.
 */
export async function setClientStatus({ db, artifacts }: ClientDeps, clientId: string, to: ClientStatus, by: Actor): Promise<ClientRecord> {
  const client = await changeClientStatus(db, clientId, to, by);
  if (to !== 'approved') {
    await artifacts.revokeClient(clientId);
    await new Promise((resolve) => setTimeout(resolve, SECOND_SWEEP_MS));
    await artifacts.revokeClient(clientId);
  }
  return client;
}
