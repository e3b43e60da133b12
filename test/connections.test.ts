// Answers given before a request's body was read leave the connection usable (issue 33, item 4):
// every answer is read whole, and the next request on a reused connection is answered. With
// Node's fetch (as any client pool reuses connections), curl and a raw socket.
import { execFile } from 'node:child_process';
import { writeFile, mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './support/server.ts';
import { approvedClient, type TestClient } from './support/fixtures.ts';
import { DRAIN_LIMIT } from '../src/http/unread-bodies.ts';
import { eventually } from './support/eventually.ts';

const run = promisify(execFile);
let server: TestServer;
let client: TestClient;

beforeAll(async () => {
  server = await startTestServer('sql', { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' });
  client = await approvedClient(server, ['PROFILE_READ']);
});
afterAll(() => server?.close());

const tokenUrl = () => `${server.url}/v2/auth/oauth2/token`;
const hugeJson = () => JSON.stringify({ grant_type: 'authorization_code', code: 'A'.repeat(1 << 20) });
const manyParams = () => Array.from({ length: 10_000 }, (_, i) => `p${i}=${i}`).join('&');
const overLimitForm = () => `grant_type=authorization_code&code=${'B'.repeat(20_000)}`; // over 16 KiB, under DRAIN_LIMIT

interface RawAnswer {
  head: string;
  body: string;
}

/**
 * Sends requests one after another on one TCP connection; the answers as read, and how the
 * connection ended. `waitForClose`: after the answers, until the server has closed it (then
 * whether by an end or a reset); otherwise as it is right after the last answer.
 */
async function onOneConnection(requests: string[], { waitForClose = false } = {}): Promise<{ answers: RawAnswer[]; ended: 'end' | 'reset' | 'open' }> {
  const { port } = new URL(server.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let buffer = Buffer.alloc(0);
  let ended: 'end' | 'reset' | 'open' = 'open';
  let closed = false;
  socket.on('data', (chunk) => (buffer = Buffer.concat([buffer, chunk])));
  socket.on('end', () => (ended = 'end'));
  socket.on('error', () => (ended = 'reset'));
  socket.on('close', () => (closed = true));
  const answers: RawAnswer[] = [];
  for (const request of requests) {
    socket.write(request);
    const answer = await nextAnswer();
    if (!answer) break;
    answers.push(answer);
  }
  // 'close' comes after the end or the error: how the connection ended is known by then.
  if (waitForClose) await eventually(() => expect(closed, 'the server closes the connection').toBe(true), { timeout: 5000 });
  socket.destroy();
  return { answers, ended };

  /** The next whole answer, or undefined when the connection ended first or none came within 3 s. */
  async function nextAnswer(): Promise<RawAnswer | undefined> {
    const read = (): RawAnswer | 'ended' => {
      const text = buffer.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split >= 0) {
        const head = text.slice(0, split);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (text.length >= split + 4 + length) {
          buffer = buffer.subarray(split + 4 + length);
          return { head, body: text.slice(split + 4, split + 4 + length) };
        }
      }
      if (ended !== 'open') return 'ended';
      throw new Error('no whole answer yet');
    };
    const answer = await eventually(read, { timeout: 3000, interval: 10 }).catch(() => 'ended' as const);
    return answer === 'ended' ? undefined : answer;
  }
}

const post = (target: string, type: string, body: string) =>
  `POST ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const get = (target: string) => `GET ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`;

describe('an answer before the body is read', () => {
  it("keeps Node's fetch working on its reused connections: 413, 413, then the next request is answered", async () => {
    const auth = `client_id=${client.client_id}&client_secret=${client.client_secret}`;
    const statuses = [];
    for (const [type, body] of [
      ['application/json', hugeJson()],
      ['application/x-www-form-urlencoded', manyParams()],
      ['text/plain', `grant_type=authorization_code&code=x&${auth}`],
      ['application/x-www-form-urlencoded', overLimitForm()],
      ['application/x-www-form-urlencoded', `grant_type=authorization_code&code=x&redirect_uri=https://app.example.com/callback&${auth}`],
    ] as const) {
      const res = await fetch(tokenUrl(), { method: 'POST', headers: { 'content-type': type }, body, signal: AbortSignal.timeout(3000) });
      statuses.push([res.status, ((await res.json()) as { error: string }).error]);
    }
    expect(statuses).toEqual([
      [413, 'invalid_request'],
      [413, 'invalid_request'],
      [400, 'invalid_request'],
      [413, 'invalid_request'],
      [400, 'invalid_grant'],
    ]);
  });

  it('reads and drops a small unread body, keeping the connection: the next request on it is answered', async () => {
    expect(Buffer.byteLength(overLimitForm())).toBeLessThan(DRAIN_LIMIT);
    const { answers, ended } = await onOneConnection([
      post('/v2/auth/oauth2/token', 'application/x-www-form-urlencoded', overLimitForm()),
      post('/v2/auth/oauth2/token', 'text/plain', 'grant_type=x'),
      post('/settings/developer/oauth-clients', 'application/x-www-form-urlencoded', `name=${'C'.repeat(40_000)}`),
      get('/health'),
    ]);
    expect(answers.map((a) => a.head.split('\r\n')[0])).toEqual(['HTTP/1.1 413 Payload Too Large', 'HTTP/1.1 400 Bad Request', 'HTTP/1.1 401 Unauthorized', 'HTTP/1.1 200 OK']);
    for (const a of answers) expect(a.head.toLowerCase()).not.toContain('connection: close');
    expect(ended).toBe('open');
  });

  it('closes gently after refusing a large body: Connection: close, the whole answer, then the end of the connection (no reset)', async () => {
    const { answers, ended } = await onOneConnection([post('/v2/auth/oauth2/token', 'application/json', hugeJson()), get('/health')], { waitForClose: true });
    expect(answers).toHaveLength(1);
    expect(answers[0]!.head).toMatch(/^HTTP\/1\.1 413 /);
    expect(answers[0]!.head.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(answers[0]!.body)).toMatchObject({ error: 'invalid_request' });
    expect(ended).toBe('end');
  });

  it('lets curl read every answer and go on with the next request', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'bodies-'));
    await Promise.all([writeFile(path.join(dir, 'huge.json'), hugeJson()), writeFile(path.join(dir, 'many.form'), manyParams()), writeFile(path.join(dir, 'over.form'), overLimitForm())]);
    const args = ['-s', '-o', '/dev/null', '-w', '%{http_code} %{num_connects}\\n', '--max-time', '5'];
    const { stdout } = await run('curl', [
      ...args, '-H', 'content-type: application/json', '--data-binary', `@${dir}/huge.json`, tokenUrl(),
      '--next', ...args, '--data-binary', `@${dir}/many.form`, tokenUrl(),
      '--next', ...args, '--data-binary', `@${dir}/over.form`, tokenUrl(),
      '--next', ...args, '--data-binary', `@${dir}/over.form`, tokenUrl(),
      '--next', ...args, `${server.url}/health`,
    ]);
    // A closed connection is opened anew (1); the small body kept its connection for the next (0).
    expect(stdout.trim().split('\n')).toEqual(['413 1', '413 1', '413 1', '413 0', '200 0']);
  });
});
