// Reference 2: a bare oidc-provider 9, configured only as far as needed to do the same work as
// our server: one confidential client (client_secret_basic), the authorization code grant with a
// refresh token on every exchange, rotating refresh tokens, the same token lifetimes, and its
// default in-memory adapter (no database, no Redis). Its development interactions (devInteractions,
// on by default in v9: any login, a "Continue" consent button) are the sign-in and consent pages.
//
// One deviation, and why: by default each Provider gets a MemoryAdapter on its own LRU store of
// 1000 entries, which cannot hold what a timed run creates (the access token under test and the
// pre-made codes would be evicted within seconds, and requests would fail with 401/400). The
// same MemoryAdapter class is used, through its own constructor argument, on the same LRU class
// with room for 250 000 entries.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
// @ts-expect-error -- internal module without type declarations
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
// @ts-expect-error -- internal module without type declarations
import LRU from 'oidc-provider/lib/helpers/lru.js';

const store: unknown = new (LRU as new (o: { maxSize: number }) => unknown)({ maxSize: 250_000 });
const Adapter = MemoryAdapter as new (model: string, store: unknown) => object;

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const clientId = process.env.BARE_CLIENT_ID ?? 'bench-client';
const clientSecret = process.env.BARE_CLIENT_SECRET ?? 'bench-secret-bench-secret-bench-secret';
const redirectUri = process.env.BARE_REDIRECT_URI ?? 'https://app.example.com/callback';

const provider = new Provider(issuer, {
  adapter: ((model: string) => new Adapter(model, store)) as never,
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  cookies: { keys: ['bare-provider-bench-cookie-key-0123456789abcdef'] },
  async findAccount(_ctx, sub) {
    return { accountId: sub, claims: async () => ({ sub }) };
  },
  // As ours: a refresh token with every code exchange (no offline_access needed), tokens that
  // outlive the browser session, rotation on every refresh, the same lifetimes.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  expiresWithSession: async () => false,
  rotateRefreshToken: true,
  ttl: { AccessToken: 1800, AuthorizationCode: 60, RefreshToken: 30 * 24 * 3600, Grant: 365 * 24 * 3600, Session: 14 * 24 * 3600, Interaction: 3600 },
  pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
  allowOmittingSingleRegisteredRedirectUri: false,
  // userinfo (GET /me with a bearer token) is on by default: the reference for bearer checks.
  features: { userinfo: { enabled: true } },
});

const server = http.createServer(provider.callback());
server.listen(port, '127.0.0.1', () => {
  console.log(`Listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 2_000).unref();
});
