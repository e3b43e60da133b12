// The proxy closes an idle upstream connection before the server does: else nginx reuses a
// connection the server is closing and a POST (which nginx does not retry) answers 502.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { KEEP_ALIVE_MS, createHttpServer } from '../../src/http/server.ts';

describe('kept-alive connections', () => {
  it("outlast the nginx recipe's upstream pool, and every public listener keeps them so", () => {
    const template = readFileSync(new URL('../../deploy/nginx/templates/gateway.conf.template', import.meta.url), 'utf8');
    const upstream = /upstream oauth_server \{([\s\S]*?)\n\}/.exec(template)?.[1] ?? '';
    const seconds = Number(/keepalive_timeout\s+(\d+)s;/.exec(upstream)?.[1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds * 1000).toBeLessThan(KEEP_ALIVE_MS);
    const server = createHttpServer();
    expect(server.keepAliveTimeout).toBe(KEEP_ALIVE_MS);
    expect(server.headersTimeout).toBeGreaterThan(KEEP_ALIVE_MS);
  });
});
