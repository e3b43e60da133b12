// The DPoP anchor (issue 49): bare oidc-provider (this repository's, the version the shared anchors
// pin) answering its own DPoP-protected resource, the userinfo endpoint, for DPoP-bound access
// tokens: the library verifies the proof (signature, typ, htm, htu, iat, ath, jti once through its
// ReplayDetection) and finds the token, its jkt matched to the proof's key, then its grant, client
// and account. The anchor for our DPoP check and /v2/me. Kept here because the shared anchors
// (BENCH_ANCHORS_DIR) are read-only; the same shape as their anchor-oidc.mjs:
//   node bench/anchors/anchor-dpop.mjs PORT
//   * adapter: the library's MemoryAdapter over a store that pins what /__bench/mint writes and keeps
//     the rest (each proof's jti) in the library's LRU, as anchor-oidc.mjs does.
//   * GET /me with Authorization: DPoP <token> and a DPoP proof: the library's userinfo.
//   * GET /__bench/mint?n=N&jkt=THUMBPRINT: N access tokens bound to that key (one Grant each,
//     scope "openid api:read"), one a line.
import http from 'node:http';
import { Provider } from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

const port = Number(process.argv[2] ?? 7005);
const issuer = `http://127.0.0.1:${port}`;
let pinning = false;
const pinned = new Map();
const lru = new LRU({ maxSize: Number(process.env.BENCH_OIDC_LRU ?? 1000) });
const store = {
  get: (k) => (pinned.has(k) ? pinned.get(k) : lru.get(k)),
  set(k, v, o) {
    if (pinning || pinned.has(k)) pinned.set(k, v);
    else lru.set(k, v, o);
    return this;
  },
  delete: (k) => {
    pinned.delete(k);
    lru.delete(k);
  },
};

const SCOPE = 'openid api:read';
const provider = new Provider(issuer, {
  adapter: (name) => new MemoryAdapter(name, store),
  clients: [{ client_id: 'bench-client', client_secret: 'bench-secret-0123456789abcdef0123456789abcdef', token_endpoint_auth_method: 'client_secret_post', grant_types: ['authorization_code'], response_types: ['code'], redirect_uris: ['http://127.0.0.1/cb'], scope: SCOPE }],
  scopes: ['openid', 'api:read'],
  ttl: { AccessToken: 1800, Grant: 14 * 24 * 3600 },
  features: { dPoP: { enabled: true }, userinfo: { enabled: true } },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});

async function mint(n, jkt) {
  const client = await provider.Client.find('bench-client');
  const out = new Array(n);
  for (let i = 0; i < n; i += 1) {
    const accountId = `user-${i}`;
    const grant = new provider.Grant({ accountId, clientId: client.clientId });
    grant.addOIDCScope(SCOPE);
    const grantId = await grant.save();
    const token = new provider.AccessToken({ accountId, client, grantId, scope: SCOPE, gty: 'authorization_code' });
    token.setThumbprint('jkt', jkt);
    out[i] = await token.save();
  }
  return out;
}

provider.use(async (ctx, next) => {
  if (ctx.path === '/__bench/mint' && ctx.method === 'GET') {
    const n = Math.min(Number(ctx.query.n ?? 1000), 500_000);
    const jkt = String(ctx.query.jkt ?? '');
    if (!jkt) {
      ctx.status = 400;
      return;
    }
    pinning = true;
    try {
      ctx.type = 'text/plain';
      ctx.body = (await mint(n, jkt)).join('\n');
    } finally {
      pinning = false;
    }
    return;
  }
  await next();
});

const server = http.createServer(provider.callback());
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1', () => console.log(`READY ${port}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
