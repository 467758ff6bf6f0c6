// The least an HTTP server can do per Talk delivery, for the ack floor (talk.bench.ts): node:http, read the
// body, parse it, answer 200 with a constant. Run in its own process, as the ExApp is; prints its port.
import { createServer } from 'node:http';

const ANSWER = Buffer.from('{"status":"accepted"}');
const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (d: Buffer) => parts.push(d));
  req.on('end', () => {
    JSON.parse(Buffer.concat(parts).toString('utf8'));
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': ANSWER.length }).end(ANSWER);
  });
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
