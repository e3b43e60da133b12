// The operator scripts for client ID metadata document clients (docs/agents.md): `clients approve
// URL` and `clients reject URL` (through clientsSetStatus), `clients approve-change URL` and
// `clients reject-change URL` (what its document asks for beyond its approval), `clients show URL`,
// `clients list-documents`, and `hosts block|unblock|list`.
import type { AdminContext } from './commands.ts';
import { InputError, NotFoundError } from '../errors.ts';
import { blockCimdHost, blockedHosts, cimdClientJson, decideCimdChange, decideCimdClient, findCimdClient, isCimdClientId, listCimdClients, unblockCimdHost } from '../cimd/review.ts';
import { CIMD_STATUSES, type CimdStatus } from '../cimd/store.ts';
import type { ClientStatus } from '../clients/model.ts';
import { coverage } from '../cimd/host-blocks.ts';

export async function cimdSetStatus(ctx: AdminContext, clientId: string, status: ClientStatus) {
  if (status !== 'approved' && status !== 'rejected') {
    throw new InputError('a metadata-document client is approved or rejected (to stop every client of its host: hosts block HOST)');
  }
  await ctx.assertStoresReachable?.();
  return cimdClientJson(await decideCimdClient(ctx, clientId, status, ctx.by));
}

export async function cimdDecideChange(ctx: AdminContext, clientId: string, approve: boolean) {
  return cimdClientJson(await decideCimdChange(ctx, clientId, approve, ctx.by));
}

export async function cimdShow(ctx: AdminContext, clientId: string) {
  const row = await findCimdClient(ctx.db, clientId);
  if (!row) throw new NotFoundError(`no client with id ${clientId} has been seen`);
  return cimdClientJson(row);
}

export async function cimdList(ctx: AdminContext, status: string | undefined) {
  if (status !== undefined && !(CIMD_STATUSES as readonly string[]).includes(status)) throw new InputError(`--status must be one of ${CIMD_STATUSES.join(', ')}`);
  return { clients: (await listCimdClients(ctx.db, status ? { status: status as CimdStatus } : {})).map(cimdClientJson) };
}

export async function hostsBlock(ctx: AdminContext, host: string) {
  await ctx.assertStoresReachable?.();
  return blockCimdHost(ctx, host, ctx.by);
}

export const hostsUnblock = (ctx: AdminContext, host: string) => unblockCimdHost(ctx, host, ctx.by);

export async function hostsList(ctx: AdminContext) {
  return { hosts: (await blockedHosts(ctx.db)).map((h) => ({ host: h.host, covers: coverage(h.host), blocked_by: h.blockedBy, reason: h.reason, blocked_at: h.blockedAt.toISOString() })) };
}

/** Whether `clients approve|reject|show ID` is about a metadata-document or openly registered client. */
export const isCimdClient = (ctx: AdminContext, clientId: string) => isCimdClientId(ctx.db, clientId);
