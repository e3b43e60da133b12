// What the server tells apps, and in which words. Every event has an id (also the webhook-id
// header: the same on every attempt, so an app can drop duplicates), a type, the time it happened
// and its data; the data always names the client. Never a secret's value, a token or a password.
import { randomBytes } from 'node:crypto';

/** Why a user's grant to the app ended. */
export type GrantRevokedReason =
  | 'user_disconnected'
  | 'admin_revoked'
  | 'refresh_token_replayed'
  | 'client_suspended'
  // An organization's change ended grants bound to it (src/orgs/installations.ts):
  | 'installation_removed'
  | 'installation_changed'
  | 'membership_ended'
  | 'org_policy'
  // One of its refresh tokens or codes was reported as leaked (src/leak-reports/leaks.ts):
  | 'credential_leaked';

/** An installation of the app in an organization, as events tell it (ids as strings, like the tokens' org_id and team_ids). */
export interface InstallationEventData {
  installation_id: string;
  org_id: string;
  /** Every team of the organization, present and future; team_ids is then empty. */
  all_teams: boolean;
  team_ids: string[];
  scopes: string[];
}

export interface WebhookEventData {
  /**
   * The user's grant ended: the app's tokens for this user no longer work (with `org_id`: those
   * bound to that organization; others the user granted outside it are untouched).
   */
  'grant.revoked': { user_id: string; reason: GrantRevokedReason; org_id?: string };
  /** An organization uninstalled the app (or blocked apps): its grants bound to that organization ended. */
  'installation.removed': InstallationEventData;
  /** An organization changed the app's teams or scopes: the grants beyond them ended. */
  'installation.changed': InstallationEventData;
  /** An administrator moved the client (approved, rejected, suspended, reinstated). */
  'client.status_changed': { from: string; to: string };
  /** An administrator decided on a change the owner asked for (added scopes or redirect URIs). */
  'client.change_decided': {
    change_id: number;
    decision: 'approved' | 'rejected';
    add_scopes: string[];
    add_redirect_uris: string[];
    to_full_access?: true;
    set_links?: { policy_uri: string | null; tos_uri: string | null };
    reason?: string;
  };
  /** A new secret; `expires_at` when it was given a lifetime. */
  'secret.generated': { secret_id: number; expires_at?: string };
  'secret.revoked': { secret_id: number };
  /** The secret expires by itself at `expires_at` (a rotation's overlap, or its lifetime ends within the notice period). */
  'secret.expiring': { secret_id: number; expires_at: string };
  /** The secret expired: it is refused from now on. */
  'secret.expired': { secret_id: number; expired_at: string };
  /**
   * A credential of the app was reported as leaked (POST /v2/auth/credentials/revoke) and revoked:
   * `hint` is its prefix and last four characters, never the credential; `user_id` when it was of
   * a user's grant, `secret_id` for a client secret.
   */
  'credential.leaked': { kind: 'access_token' | 'refresh_token' | 'authorization_code' | 'client_secret'; hint: string; reported_at: string; user_id?: string; secret_id?: number };
  /** Sent from the developer page's "Send test event". */
  'webhook.test': { message: string };
}

export type WebhookEventType = keyof WebhookEventData;
export const WEBHOOK_EVENT_TYPES = ['grant.revoked', 'installation.removed', 'installation.changed', 'client.status_changed', 'client.change_decided', 'secret.generated', 'secret.revoked', 'secret.expiring', 'secret.expired', 'credential.leaked', 'webhook.test'] as const satisfies readonly WebhookEventType[];

export interface WebhookEvent<T extends WebhookEventType = WebhookEventType> {
  id: string;
  type: T;
  /** When it happened (ISO 8601), not when it is sent. */
  timestamp: string;
  data: { client_id: string } & WebhookEventData[T];
}

/** A new event about a client, with a fresh id (the Standard Webhooks msg_ form). */
export function webhookEvent<T extends WebhookEventType>(clientId: string, type: T, data: WebhookEventData[T]): WebhookEvent<T> {
  return { id: `msg_${randomBytes(16).toString('base64url')}`, type, timestamp: new Date().toISOString(), data: { client_id: clientId, ...data } };
}
