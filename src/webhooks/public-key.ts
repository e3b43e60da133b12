// GET /v2/auth/webhooks/public-key on BASE_URL: the Ed25519 public key that signs webhooks, in the
// Standard Webhooks form (whpk_<base64>), for apps to verify the webhook-signature header with.
import { newRouter } from '../http/router.ts';
import { publishedPublicKey, type WebhookSigningKey } from './signing.ts';

export const WEBHOOK_PUBLIC_KEY_PATH = '/v2/auth/webhooks/public-key';

export function webhookPublicKeyRoutes(key: WebhookSigningKey) {
  const router = newRouter();
  const body = { keys: [{ id: key.id, algorithm: 'ed25519', public_key: publishedPublicKey(key) }] };
  router.get(WEBHOOK_PUBLIC_KEY_PATH, (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = body;
  });
  return router;
}
