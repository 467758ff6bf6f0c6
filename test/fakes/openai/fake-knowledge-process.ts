// Runs FakeKnowledgeEndpoints in its own process for benchmarks (zero latency, nothing recorded).
// Env: DIMENSIONS (default 768). Prints `listening <port>` once ready.
import { FakeKnowledgeEndpoints } from './fake-knowledge-endpoints.ts';

const dims = Number(process.env.DIMENSIONS ?? '768');
const fake = await FakeKnowledgeEndpoints.start({ dimensions: Number.isInteger(dims) && dims > 0 ? dims : 768 });
fake.recordCalls = false;
process.stdout.write(`listening ${fake.port}\n`);
const stop = () => void fake.close().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
