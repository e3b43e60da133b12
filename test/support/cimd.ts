// Client ID metadata documents served by a real HTTP server on 127.0.0.1 (the server under test
// runs with CIMD_ALLOW_LOOPBACK=true), and an agent's whole flow with one: PKCE, sign-in, Allow.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { expect } from 'vitest';
import { Browser } from './browser.ts';
import { authorize, tokenRequest, type TestUser } from './oauth.ts';

export const AGENT_REDIRECT = 'https://agent.example.com/callback';

export interface Served {
  /** The body (an object is sent as JSON), or a whole answer. */
  body?: unknown;
  status?: number;
  headers?: Record<string, string>;
  /** Never answer (the request waits until the client gives up). */
  hang?: boolean;
}

export interface DocumentServer {
  url: string;
  /** Serves `served` at `path` (replacing what was there); returns the document's URL. */
  serve(path: string, served: Served | ((url: string) => Served)): string;
  /** A document saying what an agent's usually says, at `path`; `extra` adds or replaces fields. */
  agent(path: string, extra?: Record<string, unknown>, headers?: Record<string, string>): string;
  /** Requests received per path. */
  hits: Map<string, number>;
  /** Connections accepted, of any kind. */
  connections(): number;
  close(): Promise<void>;
}

export async function startDocumentServer(host = '127.0.0.1'): Promise<DocumentServer> {
  const routes = new Map<string, (url: string) => Served>();
  const hits = new Map<string, number>();
  let connections = 0;
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const route = routes.get(path);
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    const served = route(`${base}${path}`);
    if (served.hang) return;
    const body = typeof served.body === 'string' ? served.body : JSON.stringify(served.body ?? {});
    res.writeHead(served.status ?? 200, { 'content-type': 'application/json', ...served.headers });
    res.end(body);
  });
  server.on('connection', () => void connections++);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  const api: DocumentServer = {
    url: base,
    hits,
    connections: () => connections,
    serve(path, served) {
      routes.set(path, typeof served === 'function' ? served : () => served);
      return `${base}${path}`;
    },
    agent(path, extra = {}, headers = {}) {
      return api.serve(path, (url) => ({
        body: { client_id: url, client_name: 'Helpful Agent', redirect_uris: [AGENT_REDIRECT], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], ...extra },
        headers,
      }));
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return api;
}

export function pkcePair() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Sign-in and Allow for a metadata-document client; returns the code and its verifier. `scope` undefined: none sent. */
export async function agentCode(base: string, clientId: string, user: TestUser, scope: string | undefined, browser = new Browser(), redirectUri = AGENT_REDIRECT) {
  const { verifier, challenge } = pkcePair();
  const back = await authorize(browser, base, { client_id: clientId, redirect_uri: redirectUri, scope, state: 's', code_challenge: challenge, code_challenge_method: 'S256' }, user);
  const code = back.searchParams.get('code');
  expect(code, back.href).toBeTruthy();
  return { code: code!, verifier };
}

/** The whole flow: tokens for a metadata-document client. */
export async function agentTokens(base: string, clientId: string, user: TestUser, scope: string | undefined) {
  const { code, verifier } = await agentCode(base, clientId, user, scope);
  const res = await tokenRequest(base, { grant_type: 'authorization_code', code, redirect_uri: AGENT_REDIRECT, client_id: clientId, code_verifier: verifier });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { access_token: string; refresh_token: string; scope: string };
}

/** A logger whose lines the test reads: the reason a document was refused is told there only. */
export function logSink() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const reasonFor = (clientId: string) => lines.filter((l) => l.msg === 'client_id metadata document refused' && l.clientId === clientId).map((l) => String(l.reason));
  return { lines, log: pino({ level: 'info' }, sink), reasonFor };
}
