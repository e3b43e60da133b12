// A process that logs as the server does (request lines and pino's own), then ends as its second
// argument says: `exit`, `end` (nothing left to do), `throw` (an uncaught error) or `linger` (stays
// until killed). Run bundled by test/log-stdout.test.ts: `node log-writer.js COUNT HOW`.
import { createLogger } from '../../src/log.ts';
import { requestLineWriter } from '../../src/http/envelope.ts';

const log = createLogger('info');
const line = requestLineWriter(log);
const [count, how] = [Number(process.argv.at(-2)), process.argv.at(-1)];
for (let i = 0; i < count; i += 1) line({ reqId: `r${i}`, method: 'GET', path: '/v2/me', status: 200, ms: 1, ip: '127.0.0.1' });
log.info('last');
if (how === 'exit') process.exit(0);
if (how === 'throw') setImmediate(() => {
  throw new Error('boom');
});
if (how === 'linger') setInterval(() => {}, 60_000);
