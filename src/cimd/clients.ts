// Client ID metadata document clients as the provider sees them (docs/agents.md). A client_id that
// is a URL is looked up here, never in the registry: its standing (an administrator's decision,
// its host blocked) is read first — a rejected client or a blocked host is refused without
// fetching anything — then its document, from memory while its cache time lasts (its HTTP caching
// headers, within bounds: fetch.ts), else fetched under the address rule and checked
// (document.ts). Until an administrator approves it, a client is in the limited tier: user scopes
// only, CIMD_MAX_USERS users (src/web/interactions.ts), refresh tokens of at most 7 days
// (src/oauth/provider.ts).
import type { AdapterPayload } from 'oidc-provider';
import type { CimdConfig } from '../config.ts';
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { Resolver } from '../webhooks/address-policy.ts';
import type { Logger } from '../log.ts';
import { providerView } from '../directory/view.ts';
import { documentUrl, isUrlClientId } from './client-id.ts';
import { readDocument, type CimdDocument } from './document.ts';
import { DocumentError, FETCH_TIMEOUT_MS, fetchDocument, ruledFetch } from './fetch.ts';
import { UNLIMITED_FETCHES, type FetchBudget } from './fetch-limits.ts';
import { hostnameOf, siteOf } from './host-blocks.ts';
import { hostOf, readStanding, recordSighting, type CimdStanding } from './store.ts';
import { clientScopes, pendingChange, withinApproval, type ClientAsks } from './approval.ts';
import type { Clock } from '../clock.ts';
import { POLICY } from '../settings.ts';

/** The longest a refresh token of an unreviewed client lives (the provider's ttl.RefreshToken). */
export const UNREVIEWED_REFRESH_TTL = POLICY.UNREVIEWED_REFRESH_TTL.value;
/** Documents kept in memory per instance (each at most 5 KB). */
const MAX_KEPT = POLICY.CIMD_DOCUMENTS_KEPT.value;
/**
 * How long a document that could not be used is not fetched again: a request naming it meanwhile
 * gets the same refusal. Without it, every request naming a failing URL (one that times out, say)
 * would make this server fetch again: a way to make it send requests at another's rate.
 */
export const REFUSAL_KEPT_MS = POLICY.REFUSAL_KEPT_MS.value;

/**
 * What a requester hears of every document that could not be fetched or used — an address
 * refused, no answer, a connection refused, a status other than 200, too large, not a valid
 * document, or over the fetch limits — alike, and no sooner than FAILED_FETCH_ANSWER_MS after
 * the fetch began: the answer is not a probe of what lies at a URL. The reason goes to the log.
 */
export const UNUSABLE_DOCUMENT = 'the client_id metadata document could not be fetched or is not usable by this server';
export const FAILED_FETCH_ANSWER_MS = FETCH_TIMEOUT_MS;


/**
 * The provider view's default_scope: the declared scopes the client may use now (`usable`, its
 * view's scope: an approved client's approval holds back what it has not seen, so an omitted
 * scope gets what was approved and no more).
 */
export const defaultScope = (declared: readonly string[], usable: string): string | null => {
  const allowed = new Set(usable.split(' '));
  const scopes = declared.filter((s) => allowed.has(s));
  return scopes.length ? scopes.join(' ') : null;
};


/**
 * What a metadata-document or registered client may use now: all it asks for while unreviewed (the
 * tier limits it: tier.ts); once approved, what it asks within its approval (approval.ts), the
 * rest held for review. Throws DocumentError when none of its approved redirect URIs is left.
 */
export function reviewedAsks(asks: ClientAsks, standing: Pick<CimdStanding, 'status' | 'approved'>) {
  if (standing.status !== 'approved') return { redirect_uris: asks.redirectUris, scope: clientScopes(asks.scopes).join(' '), cimd_status: standing.status, cimd_held_scopes: [] as string[] };
  // Approved before its approval was recorded cannot happen after migration 029; nothing approved is nothing usable.
  const approved = standing.approved ?? { scopes: [], redirectUris: [], links: { policyUri: null, tosUri: null } };
  const now = withinApproval(asks, approved);
  if (!now.redirectUris.length) throw new DocumentError('none of the redirect URIs an administrator approved for this app is listed any more: its new ones wait for review');
  return {
    redirect_uris: now.redirectUris,
    scope: now.scopes.join(' '),
    ...(now.links.policyUri ? { policy_uri: now.links.policyUri } : {}),
    ...(now.links.tosUri ? { tos_uri: now.links.tosUri } : {}),
    cimd_status: standing.status,
    cimd_held_scopes: pendingChange(asks, approved)?.addScopes ?? [],
  };
}

function documentView(doc: CimdDocument, standing: CimdStanding): AdapterPayload {
  const { redirect_uris: redirectUris, ...reviewed } = reviewedAsks({ scopes: doc.scopes, redirectUris: doc.redirectUris, links: doc.links }, standing);
  return providerView(
    { clientId: doc.clientId, name: doc.name, redirectUris, authMethod: doc.authMethod, flow: 'code', highTrust: standing.highTrust },
    { ...(doc.jwksUri ? { jwks_uri: doc.jwksUri } : {}), ...(doc.requirePar ? { require_pushed_authorization_requests: true } : {}), ...(doc.requireDpop ? { dpop_bound_access_tokens: true } : {}), ...reviewed, default_scope: defaultScope(doc.scopes, reviewed.scope), cimd_host: hostOf(doc.clientId) },
  );
}

export interface CimdDeps {
  db: Db;
  records: RecordCache;
  config: CimdConfig;
  production: boolean;
  /** Name resolution for the fetches (tests map names to addresses); dns.lookup by default. */
  resolve?: Resolver | undefined;
  /** The fetch limits (fetch-limits.ts); none by default. */
  budget?: FetchBudget | undefined;
  /** Where the reason a document was refused is written. */
  log?: Logger | undefined;
  /** How long after a failed fetch began it is answered (FAILED_FETCH_ANSWER_MS; tests shorten it). */
  failedAnswerMs?: number | undefined;
  /** What the documents' cache times and the refusal memory (REFUSAL_KEPT_MS) end by. */
  clock: Clock;
}

export interface CimdClients {
  readonly enabled: boolean;
  /** The provider's fetch (a private_key_jwt client's jwks_uri), under the documents' rules. */
  readonly fetch: ReturnType<typeof ruledFetch>;
  /**
   * The provider's view of the client named by a URL client_id; undefined when the id is not a URL
   * or the feature is off (an unknown client). Throws DocumentError with the reason it cannot be
   * used (UNUSABLE_DOCUMENT for every failed fetch). `requester`: the address of the request that
   * names it (its fetch limit), undefined outside a request.
   */
  find(clientId: string, requester?: string): Promise<AdapterPayload | undefined>;
  /** Forgets the documents and refusals kept in memory (tests; an operator's decision does not need it). */
  forget(): void;
}

export function cimdClients(deps: CimdDeps): CimdClients {
  const { config, clock } = deps;
  const policy = { production: deps.production, allowLoopback: config.allowLoopback, ...(deps.resolve ? { resolve: deps.resolve } : {}) };
  const kept = new Map<string, { doc: CimdDocument; until: number }>();
  const refused = new Map<string, { error: DocumentError; until: number }>();
  const fetching = new Map<string, Promise<CimdDocument>>();

  /** Keeps at most MAX_KEPT entries: the oldest goes first (Map keeps insertion order). */
  const keep = <T>(map: Map<string, T>, key: string, value: T) => {
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_KEPT) map.delete(map.keys().next().value!);
  };

  const budget = deps.budget ?? UNLIMITED_FETCHES;
  const failedAnswerMs = deps.failedAnswerMs ?? FAILED_FETCH_ANSWER_MS;
  /** A fetch the limits did not let happen: the requester's, not the URL's (not kept as a refusal). */
  class NotFetched extends DocumentError {}
  const unusable = new DocumentError(UNUSABLE_DOCUMENT);

  async function fetchAndCheck(clientId: string, url: URL, requester: string | undefined, known: boolean): Promise<CimdDocument> {
    // The failed answer's delay is a wait on real time (the answer is not a probe), not a rule of ours.
    const started = Date.now();
    let doc: CimdDocument;
    let maxAgeSeconds: number;
    try {
      // A client fetched and used before is refetched at most once per cache time: not limited.
      const over = known ? undefined : await budget.refusal(requester, siteOf(hostnameOf(clientId)));
      if (over) throw new NotFetched(`not fetched: ${over}`);
      const fetched = await fetchDocument(url, policy);
      doc = readDocument(fetched.body, clientId, config);
      maxAgeSeconds = fetched.maxAgeSeconds;
    } catch (err) {
      if (!(err instanceof DocumentError)) throw err;
      // A limit is the requester's, not the URL's: another requester may still have it fetched.
      if (!(err instanceof NotFetched)) keep(refused, clientId, { error: unusable, until: clock.now() + REFUSAL_KEPT_MS });
      // The URL is public (anyone may name it); the address is the requester's, as the request log has it.
      deps.log?.info({ clientId, ip: requester, reason: err.message }, 'client_id metadata document refused');
      await new Promise((resolve) => setTimeout(resolve, started + failedAnswerMs - Date.now()));
      throw unusable;
    }
    refused.delete(clientId);
    await recordSighting(deps.db, deps.records, doc);
    keep(kept, clientId, { doc, until: clock.now() + maxAgeSeconds * 1000 });
    return doc;
  }

  /** The document as last fetched while its cache time lasts; else fetched once for all who ask now. */
  async function documentOf(clientId: string, url: URL, requester: string | undefined, known: boolean): Promise<CimdDocument> {
    const hit = kept.get(clientId);
    if (hit && hit.until > clock.now()) return hit.doc;
    const failed = refused.get(clientId);
    if (failed && failed.until > clock.now()) throw failed.error;
    let pending = fetching.get(clientId);
    if (!pending) {
      pending = fetchAndCheck(clientId, url, requester, known).finally(() => fetching.delete(clientId));
      fetching.set(clientId, pending);
    }
    return pending;
  }

  return {
    enabled: config.enabled,
    fetch: ruledFetch(policy),
    async find(clientId, requester) {
      if (!config.enabled || !isUrlClientId(clientId)) return undefined;
      const url = documentUrl(clientId, config);
      const standing = await readStanding(deps, clientId);
      if (standing.block) throw new DocumentError(`apps from ${standing.block} are blocked on this server`);
      if (standing.status === 'rejected') throw new DocumentError('this app was rejected by an administrator');
      const doc = await documentOf(clientId, url, requester, standing.known || kept.has(clientId));
      return documentView(doc, standing);
    },
    forget: () => {
      kept.clear();
      refused.clear();
    },
  };
}
