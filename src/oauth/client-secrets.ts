// Client secrets at the token endpoints (docs/secret-rotation.md): up to two active secrets per client, stored as
// hashes, and a revoked one refused at once on every instance. The hashes come from the client's
// record, which instances cache (record-cache.ts) until PostgreSQL tells them of a change; whether
// the matched secret was revoked since is asked of what every instance shares: with Redis, the
// mark the revocation sets before it commits (client-artifacts.ts) — one key read, which the hot
// paths send with their own store read, in the same round trip; without Redis, the secret's row.
import type { Db } from '../storage/db.ts';
import type { ClientArtifacts } from '../storage/client-artifacts.ts';
import { activeSecretReader } from '../clients/service.ts';
import type { SecretUses } from '../clients/secret-use.ts';
import { matchClientSecret } from '../clients/secrets.ts';
import { factsOf } from '../directory/facts.ts';
import type { Clock } from '../clock.ts';

export interface ClientSecrets {
  /** The id of the client's secret that this one matches (constant time, hashes only), or undefined. */
  match(client: object, presented: string): number | undefined;
  /** Whether the matched secret is still active: one store read. */
  isActive(secretId: number): Promise<boolean>;
  /** Records a use (the secret's last_used_at, batched): never delays or fails a request. */
  used(secretId: number): void;
}

/** `clock`: what a secret's lifetime (its expiry in the client's record) is compared with. */
export function clientSecrets(db: Db, artifacts: Pick<ClientArtifacts, 'secretMarkedRevoked'>, uses: SecretUses, clock: Clock): ClientSecrets {
  const marked = artifacts.secretMarkedRevoked;
  return {
    // A malformed secret of ours matches no stored hash (each is the hash of a whole one), so its
    // status is never read (docs/credentials.md); checking its form first would only cost the time.
    match: (client, presented) => matchClientSecret(presented, factsOf(client).secret_hashes ?? [], clock.now()),
    isActive: marked ? async (secretId) => !(await marked(secretId)) : activeSecretReader(db),
    // A failed write is the database's outage, which the next request meets and reports.
    used: (secretId) => void uses.record(String(secretId), secretId).catch(() => {}),
  };
}
