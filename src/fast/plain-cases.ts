// The back channel's plain cases the fast path answers, by path: introspection, and the rotating
// refresh when the provider is configured as it mirrors (refresh.ts decides). Built once by the
// composition root (src/system.ts), only while the fast path is on.
import type Provider from 'oidc-provider';
import type { Logger } from '../log.ts';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import type { TokenEndpointLimits } from '../oauth/rate-limits.ts';
import type { RefreshGrace } from '../oauth/refresh-grace.ts';
import type { ClientSecrets } from '../oauth/client-secrets.ts';
import { INTROSPECTION_PATH, TOKEN_PATH } from '../http/paths.ts';
import type { AnswerBackChannel } from './back-channel.ts';
import { introspection } from './introspection.ts';
import { refreshGrant } from './refresh.ts';

export interface PlainCaseDeps {
  provider: Provider;
  secrets: ClientSecrets;
  limits: TokenEndpointLimits;
  grace: RefreshGrace;
  artifacts: ArtifactStorage;
  /** The platform API's resource indicator (src/oauth/resources.ts platformResource). */
  platform: string;
  accountExists(accountId: string): Promise<boolean>;
  log: Logger;
}

export function backChannelPlainCases({ provider, secrets, limits, grace, artifacts, platform, accountExists, log }: PlainCaseDeps): Map<string, AnswerBackChannel> {
  const plainCases = new Map([[INTROSPECTION_PATH, introspection(provider, secrets, limits, platform, artifacts.together)]]);
  const refresh = refreshGrant({ provider, secrets, limits, grace, rotation: artifacts.refreshRotation, together: artifacts.together, accountExists, log });
  if (refresh) plainCases.set(TOKEN_PATH, refresh);
  return plainCases;
}
