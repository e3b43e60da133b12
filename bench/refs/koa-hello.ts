// Reference 1 (the floor): a bare Koa 3 app with one JSON route, on the same runtime and core as
// our server. Nothing is cheaper for an HTTP JSON answer in this stack.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

const app = new Koa();
app.use((ctx) => {
  if (ctx.method === 'GET' && ctx.path === '/hello') {
    ctx.body = { status: 'success', data: { hello: 'world' } };
  }
});

const server = http.createServer(app.callback());
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`Listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 2_000).unref();
});
