// The operator scripts for client ID metadata document and registered clients (docs/agents.md):
// their side of `clients approve|reject|approve-change|reject-change|show ID` (found by the
// directory: directory-commands.ts), `clients list-documents`, and `hosts block|unblock|list`.
import type { AdminContext } from './commands.ts';
import { InputError } from '../errors.ts';
import { blockCimdHost, blockedHosts, cimdClientJson, decideCimdChange, decideCimdClient, listCimdClients, setCimdHighTrust, unblockCimdHost } from '../review/review.ts';
import { CIMD_STATUSES, type CimdStatus } from '../directory/status.ts';
import { coverage } from '../cimd/host-blocks.ts';

/** A decision on a metadata-document or registered client (the directory's status machine chose `status`: src/directory/status.ts). */
export async function cimdSetStatus(ctx: AdminContext, clientId: string, status: 'approved' | 'rejected') {
  await ctx.assertStoresReachable?.();
  return cimdClientJson(await decideCimdClient(ctx, clientId, status, ctx.by));
}

export async function cimdSetHighTrust(ctx: AdminContext, clientId: string, on: boolean) {
  return cimdClientJson(await setCimdHighTrust(ctx, clientId, on, ctx.by));
}

export async function cimdDecideChange(ctx: AdminContext, clientId: string, approve: boolean) {
  return cimdClientJson(await decideCimdChange(ctx, clientId, approve, ctx.by));
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

