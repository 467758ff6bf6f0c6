// The reference bridge runs as its own process with the repository's node_modules.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { McpConnection } from '../../lib/mcp/mcp-connection.ts';

const SERVER = join(import.meta.dirname, '../../examples/nuqloud-bridge/server.ts');

describe('examples/nuqloud-bridge/server.ts as a process', () => {
  it('listens on --port, serves /health and the five tools, and reads the --config file when it appears', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nuqloud-'));
    const configFile = join(dir, 'bridge.json');
    const child = spawn(process.execPath, [SERVER, '--port', '0', '--config', configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, BRIDGE_API_TOKEN: '' },
    });
    try {
      let out = '';
      child.stdout.setEncoding('utf8');
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: string) => {
          out += chunk;
          const m = /listening on (http:\/\/\S+\/mcp)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`the bridge exited with ${code}`)));
      });
      const health = (): Promise<unknown> => fetch(url.replace(/\/mcp$/, '/health')).then((r) => r.json());
      assert.deepEqual(await health(), { status: 'ok', configured: false });

      const connection = new McpConnection({ name: 'cli', url });
      try {
        const tools = await connection.listTools();
        assert.deepEqual(
          tools.map((t) => t.name),
          ['bridge_list_resources', 'bridge_map_resource', 'bridge_publish', 'bridge_send_message', 'bridge_remove_mapping'],
        );
        assert.deepEqual(
          tools.filter((t) => t.meta['requiresConfirmation'] === true).map((t) => t.name),
          ['bridge_publish', 'bridge_send_message', 'bridge_remove_mapping'],
        );
        const refused = await connection.callTool('bridge_list_resources', {});
        assert.equal(refused.isError, true, 'unconfigured, every call is refused');
      } finally {
        await connection.close();
      }

      writeFileSync(configFile, JSON.stringify({ contextKey: Buffer.alloc(32, 7).toString('base64url'), audience: 'mcp:cli' }));
      assert.deepEqual(await health(), { status: 'ok', configured: true });
    } finally {
      child.kill('SIGTERM');
      if (child.exitCode === null) await once(child, 'exit');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
