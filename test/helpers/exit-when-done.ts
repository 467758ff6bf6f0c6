// Preloaded into every test process (Makefile): once a file's tests are done, a process that
// open handles would keep alive exits shortly after, with its results written. Node's
// --test-force-exit exits at once and can drop reports that are still being written.
import { after } from 'node:test';

after(() => {
  setTimeout(() => process.exit(), 1000).unref();
});
