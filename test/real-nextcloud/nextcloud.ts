// The real Nextcloud 33 test server, as its users and its admin reach it: OCS, WebDAV, Talk and occ.
// `make test-nextcloud` starts it (scripts/ensure-nextcloud.sh) and exports NEXTCLOUD_URL, NEXTCLOUD_DIR
// and NEXTCLOUD_RUN, as `../shared/nextcloud/setup.sh` prints them.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export type User = 'admin' | 'alice' | 'bob';

export interface ChatMessage {
  id: number;
  actorType: string;
  actorId: string;
  message: string;
  messageType: string;
  systemMessage: string;
  referenceId: string;
  /** The message this one replies to, as Talk reports it. */
  parent?: { id: number };
  reactions: Record<string, number>;
}

export interface Response<T = any> {
  status: number;
  data: T;
  text: string;
}

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run this suite with 'make test-nextcloud', which starts the real Nextcloud test server`);
  return value;
}

export class RealNextcloud {
  readonly url: string;
  readonly dir: string;
  readonly runDir: string;
  readonly #passwords = new Map<User, string>();

  constructor() {
    this.url = required('NEXTCLOUD_URL').replace(/\/$/, '');
    this.dir = required('NEXTCLOUD_DIR');
    this.runDir = required('NEXTCLOUD_RUN');
  }

  password(user: User): string {
    let p = this.#passwords.get(user);
    if (p === undefined) {
      p = readFileSync(join(this.runDir, `${user}-password`), 'utf8').trim();
      this.#passwords.set(user, p);
    }
    return p;
  }

  basic(user: User): string {
    return `Basic ${Buffer.from(`${user}:${this.password(user)}`).toString('base64')}`;
  }

  /** `occ` as the owner of the tree (www-data when we are root), as setup.sh runs it. */
  async occ(...args: string[]): Promise<string> {
    const asWwwData = process.getuid?.() === 0;
    const cmd = asWwwData ? 'runuser' : 'php';
    const argv = asWwwData ? ['-u', 'www-data', '--', 'php', join(this.dir, 'occ'), ...args] : [join(this.dir, 'occ'), ...args];
    const { stdout } = await run(cmd, argv, { maxBuffer: 16 << 20 });
    return stdout;
  }

  /** A long-running `occ` (e.g. `background-job:worker`) in its own process group; `stop()` ends that group. */
  startOcc(...args: string[]): { stop(): Promise<void> } {
    const asWwwData = process.getuid?.() === 0;
    const cmd = asWwwData ? 'runuser' : 'php';
    const argv = asWwwData ? ['-u', 'www-data', '--', 'php', join(this.dir, 'occ'), ...args] : [join(this.dir, 'occ'), ...args];
    const child = spawn(cmd, argv, { detached: true, stdio: 'ignore' });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    return {
      stop: async () => {
        if (child.exitCode === null && child.pid !== undefined) {
          try {
            process.kill(-child.pid, 'SIGTERM');
          } catch {
            // already gone
          }
        }
        await exited;
      },
    };
  }

  async request(user: User | null, method: string, path: string, init: { body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers: Record<string, string> = { ...(user ? { Authorization: this.basic(user) } : {}), ...init.headers };
    const r = await fetch(`${this.url}${path}`, { method, headers, ...(init.body !== undefined ? { body: init.body } : {}), redirect: 'manual' });
    const text = await r.text();
    let data: unknown;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    return { status: r.status, data, text };
  }

  /** An OCS call; answers the `ocs.data` part. */
  async ocs(user: User, method: string, path: string, body?: Record<string, unknown>): Promise<Response> {
    const r = await this.request(user, method, `/ocs/v2.php${path}`, {
      headers: { 'OCS-APIRequest': 'true', Accept: 'application/json', ...(body ? { 'Content-Type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    return { ...r, data: r.data?.ocs?.data ?? null };
  }

  /** A call to the ExApp through AppAPI's proxy, as a signed-in user (the app page's way in). */
  proxy(user: User, method: string, path: string, body?: unknown): Promise<Response> {
    return this.request(user, method, `/index.php/apps/app_api/proxy/educai${path}`, {
      headers: { 'OCS-APIRequest': 'true', Accept: 'application/json', ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  }

  dav(user: User, method: string, path: string, body?: string, headers: Record<string, string> = {}): Promise<Response> {
    const encoded = path.split('/').map(encodeURIComponent).join('/');
    return this.request(user, method, `/remote.php/dav/files/${user}/${encoded}`, { ...(body !== undefined ? { body } : {}), headers });
  }

  async putFile(user: User, path: string, content: string): Promise<void> {
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) await this.dav(user, 'MKCOL', parts.slice(0, i).join('/'));
    const r = await this.dav(user, 'PUT', path, content);
    assert.ok(r.status === 201 || r.status === 204, `PUT ${path}: ${r.status}`);
  }

  async readFile(user: User, path: string): Promise<string | null> {
    const r = await this.dav(user, 'GET', path);
    return r.status === 200 ? r.text : null;
  }

  // ---- Talk ----

  async createRoom(owner: User, name: string, participants: User[] = []): Promise<string> {
    const r = await this.ocs(owner, 'POST', '/apps/spreed/api/v4/room', { roomType: 2, roomName: name });
    assert.equal(r.status, 201, r.text);
    const token = String(r.data.token);
    for (const p of participants) {
      const added = await this.ocs(owner, 'POST', `/apps/spreed/api/v4/room/${token}/participants`, { newParticipant: p, source: 'users' });
      assert.equal(added.status, 200, added.text);
    }
    return token;
  }

  /** The Talk bots a moderator may enable in the room, by name. */
  async roomBots(user: User, token: string): Promise<Array<{ id: number; name: string; state: number }>> {
    const r = await this.ocs(user, 'GET', `/apps/spreed/api/v1/bot/${token}`);
    assert.equal(r.status, 200, r.text);
    return r.data;
  }

  /** Enables a bot in a room as its moderator, the way the Talk UI does. */
  async enableBot(user: User, token: string, name = 'Talk AI'): Promise<number> {
    const bot = (await this.roomBots(user, token)).find((b) => b.name === name);
    assert.ok(bot, `Talk offers the bot "${name}" in the room`);
    const r = await this.ocs(user, 'POST', `/apps/spreed/api/v1/bot/${token}/${bot.id}`);
    assert.ok(r.status === 200 || r.status === 201, r.text);
    return bot.id;
  }

  /** Posts as `user`; Talk delivers the bot webhooks before it answers. */
  async post(user: User, token: string, message: string, replyTo?: number): Promise<ChatMessage> {
    const r = await this.ocs(user, 'POST', `/apps/spreed/api/v1/chat/${token}`, { message, ...(replyTo ? { replyTo } : {}) });
    assert.equal(r.status, 201, r.text);
    return r.data;
  }

  /** The room's chat as `user`, oldest first. */
  async chat(user: User, token: string): Promise<ChatMessage[]> {
    const r = await this.ocs(user, 'GET', `/apps/spreed/api/v1/chat/${token}?lookIntoFuture=0&limit=200&setReadMarker=0`);
    assert.equal(r.status, 200, r.text);
    return (r.data as ChatMessage[]).slice().reverse();
  }

  async botMessages(user: User, token: string): Promise<ChatMessage[]> {
    return (await this.chat(user, token)).filter((m) => m.actorType === 'bots');
  }
}
