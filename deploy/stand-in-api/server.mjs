// A stand-in for the scheduling API behind the gateway (docker-compose.gateway.yml): answers
// every call with what reached it — the request line and the X-Auth-* headers the gateway set —
// so a deployment can be tried before the real API is wired in. Not for production.
import http from 'node:http';

const port = Number(process.env.PORT ?? 8080);

http
  .createServer((req, res) => {
    const auth = Object.fromEntries(Object.entries(req.headers).filter(([name]) => name.startsWith('x-auth-')));
    req.resume();
    res.setHeader('Content-Type', 'application/json');
    res.end(`${JSON.stringify({ status: 'success', data: { method: req.method, url: req.url, auth } })}\n`);
  })
  .listen(port, '0.0.0.0', () => console.log(`stand-in scheduling API on port ${port}`));
