// Cold start: the MCP SDK is loaded with the first connection, not when the app's modules load.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { isMcpError, isStreamableHttpError, loadMcpSdk } from '../../lib/mcp/mcp-sdk.ts';

const REPO = new URL('../../', import.meta.url).pathname;

describe('MCP SDK loading', () => {
  it('is not loaded by importing the composition root', () => {
    const script = `
      import { registerHooks } from 'node:module';
      const seen = [];
      registerHooks({ resolve(spec, ctx, next) { const r = next(spec, ctx); if (r.url.includes('@modelcontextprotocol')) seen.push(r.url); return r; } });
      await import('./lib/bootstrap.ts');
      process.stdout.write(String(seen.length));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: REPO, encoding: 'utf8' });
    assert.equal(out.trim(), '0');
  });

  it('classifies SDK errors by class once loaded, and loads once', async () => {
    const [a, b] = await Promise.all([loadMcpSdk(), loadMcpSdk()]);
    assert.equal(a, b);
    assert.equal(isMcpError(new a.McpError(-32001, 'timeout')), true);
    assert.equal(isStreamableHttpError(new a.StreamableHTTPError(404, 'gone')), true);
    assert.equal(isMcpError(Object.assign(new Error('MCP error -32001'), { code: -32001 })), false, 'a look-alike is not an SDK error');
  });
});
