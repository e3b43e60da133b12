// The resource API's two answers — the gateway check and /v2/me — over one token verifier, built
// once by the composition root (src/system.ts) and served alike by the fast path's listener and
// the Koa app's routes.
import type Provider from 'oidc-provider';
import type { Db } from '../storage/db.ts';
import type { RecordCache } from '../storage/record-cache.ts';
import type { TokenCache } from '../storage/token-cache.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import { accessTokenVerifier, type VerifyToken } from './access.ts';
import { gatewayCheck } from './check.ts';
import { readMe } from './me.ts';
import { proofChecker, singleUse } from '../oauth/dpop.ts';
import { dpopNonces } from '../seams/oidc-provider.ts';
import { platformResource, protectedResourceMetadataUrl } from '../oauth/resources.ts';
import { closedOrgs } from '../orgs/closed-orgs.ts';

export interface ResourceApi {
  verify: VerifyToken;
  /** Where every 401 says to learn how to get a token (RFC 9728). */
  resourceMetadata: string;
  answerCheck: ReturnType<typeof gatewayCheck>;
  answerMe: ReturnType<typeof readMe>;
}

export interface ResourceApiDeps {
  provider: Provider;
  db: Db;
  records: RecordCache;
  artifacts: ArtifactStorage;
  tokenCache?: TokenCache | undefined;
  baseUrl: string;
}

export function resourceApi({ provider, db, records, artifacts, tokenCache, baseUrl }: ResourceApiDeps): ResourceApi {
  // Tokens for the platform API only (RFC 8707); DPoP-bound tokens with their proofs
  // (src/oauth/dpop.ts): the provider's nonces, a jti once across instances.
  const proofs = { check: proofChecker(dpopNonces(provider)), unique: singleUse(artifacts.flights) };
  const verify = accessTokenVerifier(provider, platformResource(baseUrl), tokenCache, proofs);
  const resourceMetadata = protectedResourceMetadataUrl(baseUrl);
  return {
    verify,
    resourceMetadata,
    answerCheck: gatewayCheck(verify, closedOrgs(db, records), resourceMetadata),
    answerMe: readMe(verify, { db, records }, resourceMetadata),
  };
}
