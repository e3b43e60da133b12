// A plain OpenID provider for the upstream sign-in tests (test/upstream-sign-in.test.ts): node-oidc-
// provider in its own process, with one static client, its built-in login and consent pages
// (devInteractions: any login is the account id), and accounts the test adds. Prints
// {"port":N,"issuer":"…"} once listening. Env: CLIENT_ID, CLIENT_SECRET. The servers under test
// learn the issuer first and only then have their ports: POST /__test/setup {redirect_uris,
// post_logout_redirect_uris, key_client?: {client_id, jwk, redirect_uris}} makes the provider with
// them (once), before any sign-in.
//
// For the refusal tests, POST /__test/mode with {"idToken": "normal" | "wrong-key" | "alg-none"}
// rewrites the ID token of the next token responses: signed with a key the upstream never
// published, or unsigned. POST /__test/accounts {sub, email, email_verified, name} adds an account.
import http from 'node:http';
import { generateKeyPairSync, createSign } from 'node:crypto';
import Provider from 'oidc-provider';

const accounts = new Map();
let idTokenMode = 'normal';

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = server.address().port;
const issuer = `http://127.0.0.1:${port}`;

let provider;

function makeProvider({ redirect_uris = [], post_logout_redirect_uris = [], key_client }) {
  return new Provider(issuer, {
  clients: [
    {
      client_id: process.env.CLIENT_ID,
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: redirect_uris,
      post_logout_redirect_uris: post_logout_redirect_uris,
      token_endpoint_auth_method: 'client_secret_basic',
    },
    // A client that authenticates with a client assertion (private_key_jwt), its public key given.
    ...(key_client ? [{ client_id: key_client.client_id, token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [key_client.jwk] }, redirect_uris: key_client.redirect_uris }] : []),
  ],
  async findAccount(_ctx, id) {
    const account = accounts.get(id);
    if (!account) return undefined;
    return { accountId: id, claims: () => ({ sub: id, email: account.email, email_verified: account.email_verified, name: account.name }) };
  },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  features: { devInteractions: { enabled: true } },
  // Not the names of the provider under test on the same host (cookies do not tell ports apart).
  cookies: { keys: ['upstream-test-key'], names: { session: 'up_session', interaction: 'up_interaction', resume: 'up_resume', state: 'up_state' } },
  // The claims in the ID token itself, as many upstreams put them.
  conformIdTokenClaims: false,
});
}

/** An ID token of the same claims, signed by a key nobody published, or not signed at all. */
function rewritten(idToken, mode) {
  const [headerPart, payloadPart] = idToken.split('.');
  const header = JSON.parse(Buffer.from(headerPart, 'base64url').toString());
  if (mode === 'alg-none') return `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payloadPart}.`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const head = Buffer.from(JSON.stringify({ alg: 'RS256', kid: header.kid })).toString('base64url');
  const signature = createSign('RSA-SHA256').update(`${head}.${payloadPart}`).sign(privateKey).toString('base64url');
  return `${head}.${payloadPart}.${signature}`;
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString() || '{}');
}

let handle;
server.on('request', async (req, res) => {
  const path = new URL(req.url, issuer).pathname;
  if (path.startsWith('/__test/') && req.method === 'POST') {
    const body = await readJson(req);
    if (path === '/__test/setup' && !provider) {
      provider = makeProvider(body);
      provider.use(async (ctx, next) => {
        await next();
        if (ctx.path === '/token' && idTokenMode !== 'normal' && ctx.body && typeof ctx.body === 'object' && ctx.body.id_token) {
          ctx.body = { ...ctx.body, id_token: rewritten(ctx.body.id_token, idTokenMode) };
        }
      });
      handle = provider.callback();
    }
    if (path === '/__test/mode') idTokenMode = body.idToken;
    if (path === '/__test/accounts') accounts.set(body.sub, body);
    res.statusCode = 204;
    return res.end();
  }
  if (!handle) {
    res.statusCode = 503;
    return res.end('not set up');
  }
  handle(req, res);
});
process.stdout.write(`${JSON.stringify({ port, issuer })}\n`);
