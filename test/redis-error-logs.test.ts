// Redis reply errors in the logs: ioredis attaches the failed command's arguments to the error
// (keys, payloads, raw artifact ids), and errors are logged as `err`. A real reply error is forced
// in a real flow — the key of a grant's access-token index made a string, so the token's save
// script fails with WRONGTYPE — and the captured log must name the failure but carry no
// arguments: no artifact id, no secret, no token.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/log.ts';
import { artifactKey } from '../src/storage/artifact-key.ts';
import { startTestServer, type TestServer } from './support/server.ts';
import { tokenRequest } from './support/oauth.ts';
import { approvedClient, codeFor, newUser, REDIRECT } from './support/fixtures.ts';

let server: TestServer;
const logLines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  server = await startTestServer('redis', {}, { log: createLogger('debug', sink) });
});
afterAll(() => server?.close());

describe('Redis reply errors in the logs', () => {
  it('logs the failure without the command arguments', async () => {
    const client = await approvedClient(server, ['PROFILE_READ']);
    const user = await newUser(server);
    const code = await codeFor(server, client, user, 'PROFILE_READ');
    const { redis, prefix } = server.redis!;
    const stored = JSON.parse((await redis.hget(`${prefix}AuthorizationCode:${artifactKey(code)}`, 'payload'))!) as { grantId: string };
    // The grant's index of access tokens holds a string: saving the new access token fails in Redis.
    await redis.set(`${prefix}AccessToken:grant:${stored.grantId}`, 'not a set');

    const res = await tokenRequest(server.url, { grant_type: 'authorization_code', code, redirect_uri: REDIRECT, ...client });
    expect(res.status).toBe(500);
    expect(res.body.error).toBe('server_error');

    const log = logLines.join('\n');
    expect(log).toMatch(/WRONGTYPE/); // the failure is logged
    for (const secret of [stored.grantId, code, client.client_secret, artifactKey(code)]) expect(log).not.toContain(secret);
    expect(log).not.toContain('"args"');
    expect(log).toMatch(/"command":\{"name":"evalsha"\}/); // …with the command's name only
  });
});
