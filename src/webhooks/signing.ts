// The Standard Webhooks signature, symmetric scheme (v1, HMAC-SHA256 of `${id}.${timestamp}.${body}`),
// made by the official `standardwebhooks` package, so the receivers' libraries (standardwebhooks,
// Svix) verify it unmodified. Signed with each of the client's live secrets: during a secret's
// overlap the header carries two signatures, space-separated, and either verifies.
import { Webhook } from 'standardwebhooks';

/** The three headers of one attempt. */
export function signatureHeaders(secrets: string[], messageId: string, body: string, now = new Date()): Record<string, string> {
  if (secrets.length === 0) throw new Error('no signing secret');
  // The library signs with whole seconds of `now`; the header must say the same second.
  const at = new Date(Math.floor(now.getTime() / 1000) * 1000);
  const signatures = secrets.map((secret) => new Webhook(secret).sign(messageId, at, body));
  return { 'webhook-id': messageId, 'webhook-timestamp': String(at.getTime() / 1000), 'webhook-signature': signatures.join(' ') };
}
