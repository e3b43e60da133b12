// The operator scripts that take a client of any kind (src/directory/): `clients show`,
// `approve`, `reject`, `suspend`, `approve-change`, `reject-change` find it by one directory lookup
// and answer in its kind's shape — a registry client as clientJson, a metadata-document or
// registered one as cimdClientJson. An id of no kind, or of no client, gets one clear refusal.
import type { AdminContext } from './commands.ts';
import * as commands from './commands.ts';
import * as cimdCommands from './cimd-commands.ts';
import { directoryClient } from '../client-lookup/lookup.ts';
import { cimdClientJson } from '../review/review.ts';
import { CIMD_STATUSES, CLIENT_STATUSES, SOURCE_NAMES, statusAskedBy, type StatusCommand } from '../directory/status.ts';
import { InputError } from '../errors.ts';

/** approve / reject / suspend: a registry client's outcome (for the one-line text), or a document's client. */
export async function clientsDecide(ctx: AdminContext, clientId: string, command: StatusCommand) {
  const client = await directoryClient(ctx.db, clientId);
  const to = statusAskedBy(client.source, command);
  if (client.source === 'registry') return commands.clientsChangeStatus(ctx, client.clientId, to);
  return { document: await cimdCommands.cimdSetStatus(ctx, client.clientId, to === 'approved' ? 'approved' : 'rejected') };
}

/** approve-change / reject-change. */
export async function clientsDecideChange(ctx: AdminContext, clientId: string, approve: boolean): Promise<object> {
  const client = await directoryClient(ctx.db, clientId);
  return client.source === 'registry' ? commands.clientsDecideChange(ctx, client.clientId, approve) : cimdCommands.cimdDecideChange(ctx, client.clientId, approve);
}

/** set-high-trust: a registry client's setting, or an administrator's mark on another kind. */
export async function clientsSetHighTrust(ctx: AdminContext, clientId: string, setting: string): Promise<object> {
  const client = await directoryClient(ctx.db, clientId);
  if (client.source === 'registry') return commands.clientsSetHighTrust(ctx, client.clientId, setting);
  return cimdCommands.cimdSetHighTrust(ctx, client.clientId, commands.highTrustSetting(setting));
}

export async function clientsShow(ctx: AdminContext, clientId: string): Promise<object> {
  const client = await directoryClient(ctx.db, clientId);
  return client.source === 'registry' ? commands.clientsShow(ctx, client.clientId) : cimdClientJson(client.row);
}

/**
 * Why the registry's own commands (names, scopes, redirect URIs, limits, webhooks, secrets,
 * deletion) have no metadata-document or registered client: what it is and asks for is its
 * document's or registration's, it holds no secret, and it gets the server's default limits; an
 * administrator approves or rejects it.
 */
const REGISTRY_ONLY = "its name, scopes and redirect URIs are its document's or registration's, it has no secrets or webhook and gets the server's default limits: approve or reject it instead";

/** A registry command's run, refusing (naming the kind, and why) an id of another kind or of none. */
export function registryOnly<A extends unknown[], R>(command: string, run: (ctx: AdminContext, id: string, ...rest: A) => Promise<R>) {
  return async (ctx: AdminContext, id: string, ...rest: A): Promise<R> => {
    const client = await directoryClient(ctx.db, id);
    if (client.source !== 'registry') throw new InputError(`${command} is for registry clients: ${id} is a ${SOURCE_NAMES[client.source]}; ${REGISTRY_ONLY}`);
    return run(ctx, client.clientId, ...rest);
  };
}

/** `clients list --kind`: the registry's clients (the default, as before), one other kind, or every kind. */
const LIST_KINDS = ['registry', 'metadata_document', 'registered', 'all'] as const;
type ListKind = (typeof LIST_KINDS)[number];

export async function clientsList(ctx: AdminContext, opts: { status?: string; kind?: string }) {
  const kind = (opts.kind ?? 'registry') as ListKind;
  if (!LIST_KINDS.includes(kind)) throw new InputError(`--kind must be one of ${LIST_KINDS.join(', ')}`);
  const registry = kind === 'registry' || kind === 'all';
  const reviewed = kind !== 'registry';
  const statuses = [...new Set([...(registry ? CLIENT_STATUSES : []), ...(reviewed ? CIMD_STATUSES : [])])];
  const { status } = opts;
  if (status !== undefined && !(statuses as string[]).includes(status)) throw new InputError(`--status must be one of ${statuses.join(', ')}${kind === 'registry' ? ' (unreviewed: with --kind metadata_document, registered or all)' : ''}`);
  const ofRegistry = registry && (status === undefined || (CLIENT_STATUSES as readonly string[]).includes(status)) ? (await commands.clientsList(ctx, status)).clients : [];
  const ofOthers = reviewed && (status === undefined || (CIMD_STATUSES as readonly string[]).includes(status)) ? (await cimdCommands.cimdList(ctx, status)).clients.filter((c) => kind === 'all' || c.kind === kind) : [];
  return { clients: [...ofRegistry, ...ofOthers] };
}
