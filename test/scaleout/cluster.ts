import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BotStore } from '../../lib/bots/bot-store.ts';
import type { FakeNextcloud } from '../fakes/nextcloud/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/databases.ts';
import { ExAppProcess, exAppEnv, freePort } from '../helpers/exapp-process.ts';
import { TEST_SECRET, waitFor } from '../helpers/harness.ts';

export const LLM_KEY = 'scale-provider-key-123';

export const system = (): Record<string, string> => ({
  'EX-APP-ID': 'educai',
  'EX-APP-VERSION': '0.1.0',
  'AUTHORIZATION-APP-API': Buffer.from(`:${TEST_SECRET}`).toString('base64'),
  'Content-Type': 'application/json',
});
export const asUser = (uid: string): Record<string, string> => ({
  ...system(),
  'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${TEST_SECRET}`).toString('base64'),
  requesttoken: 't',
});

export interface ClusterProcess {
  role: 'web' | 'worker' | 'all';
  app: ExAppProcess;
  logFile: string;
}

/**
 * Web and worker processes of one ExApp on a fresh PostgreSQL schema, against the fake Nextcloud: a
 * bot (`@tutor`, owned by alice) onboarded in `rooms` group rooms, answering on mention.
 */
export class Cluster {
  readonly processes: ClusterProcess[] = [];
  readonly rooms: string[] = [];
  botId = '';
  readonly #nc: FakeNextcloud;
  readonly #tdb: TestDatabase;
  readonly #env: Record<string, string>;
  readonly #logDir = mkdtempSync(join(tmpdir(), 'educai-scaleout-'));

  private constructor(nc: FakeNextcloud, tdb: TestDatabase, env: Record<string, string>) {
    this.#nc = nc;
    this.#tdb = tdb;
    this.#env = env;
  }

  get db(): TestDatabase {
    return this.#tdb;
  }

  /** `env`: extra variables for every process (lease time, concurrency). */
  static async create(
    nc: FakeNextcloud,
    options: { rooms: number; env?: Record<string, string>; bot?: { visibility: 'personal' | 'global' } },
  ): Promise<Cluster> {
    const tdb = await createTestDatabase('postgres');
    // Every replica must decrypt what another stored: one vault key for all of them (docs/DEPLOYMENT.md).
    const env = { EDUCAI_VAULT_KEY: randomBytes(32).toString('base64url'), ...options.env };
    const cluster = new Cluster(nc, tdb, env);
    const visibility = options.bot?.visibility ?? 'global';
    const bot = await new BotStore(tdb.db).create(
      { displayName: 'Tutor', mention: 'tutor', systemPrompt: 'You teach.', visibility },
      'alice',
      visibility === 'global' ? { approvalStatus: 'approved' } : {},
    );
    cluster.botId = bot.id;
    const now = Date.now();
    for (let i = 0; i < options.rooms; i++) {
      const token = nc.createRoom({
        name: `scale ${i}`,
        type: 2,
        participants: [
          { actorId: 'alice', participantType: 1 },
          { actorId: 'bob', participantType: 3 },
        ],
      }).token;
      cluster.rooms.push(token);
    }
    for (let i = 0; i < cluster.rooms.length; i += 200) {
      await tdb.db
        .insertInto('room_states')
        .values(
          cluster.rooms
            .slice(i, i + 200)
            .map((token) => ({
              bot_id: bot.id,
              room_token: token,
              response_mode: 'mention' as const,
              onboarding_status: 'completed' as const,
              current_question_id: null,
              onboarding_answers: '[]',
              deferred_message: null,
              activated_by: 'alice',
              created_at: now,
              updated_at: now,
            })),
        )
        .execute();
    }
    return cluster;
  }

  /**
   * Starts one process of the role (its log, at info, in a file of its own) and waits until it is built:
   * `/heartbeat` answers while the composition root still loads, the "listening" line comes after it.
   * `env.LOG_LEVEL` above info (benchmarks) skips that wait.
   */
  async start(role: 'web' | 'worker' | 'all', env: Record<string, string> = {}): Promise<ClusterProcess> {
    const logFile = join(this.#logDir, `${role}-${this.processes.length}.log`);
    const level = env.LOG_LEVEL ?? 'info';
    const app = new ExAppProcess(await freePort(), exAppEnv(this.#nc.url, this.#tdb, { EDUCAI_ROLE: role, ...this.#env, ...env, LOG_LEVEL: level }), {
      logFile,
    });
    await app.start();
    // (Above info there is no such line: the caller waits its own way.)
    if (level === 'info')
      await waitFor(() => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('"msg":"listening"'), `the ${role} process to be built`, 120_000);
    const p = { role, app, logFile };
    this.processes.push(p);
    return p;
  }

  web(i = 0): ExAppProcess {
    return this.processes.filter((p) => p.role !== 'worker')[i]!.app;
  }

  /** /enabled through the first web process, the model and egress settings as the admin, and the Talk bot in every room. */
  async configure(llmUrl: string): Promise<void> {
    const web = this.web();
    assert.deepEqual(await (await fetch(`${web.url}/enabled?enabled=1`, { method: 'PUT', headers: system() })).json(), { error: '' });
    const admin = asUser('admin');
    const saved = await fetch(`${web.url}/api/v1/admin/settings`, {
      method: 'PUT',
      headers: admin,
      body: JSON.stringify({ primaryEndpoint: llmUrl, primaryKey: LLM_KEY, defaultModel: 'primary:fake-model' }),
    });
    assert.equal(saved.status, 200);
    // The fake provider listens on 127.0.0.1, which the egress module reaches only when allow-listed (S18).
    const egress = await fetch(`${web.url}/api/v1/admin/egress`, { method: 'PUT', headers: admin, body: JSON.stringify({ allowList: ['127.0.0.1'] }) });
    assert.equal(egress.status, 200);
    for (const room of this.rooms) this.#nc.enableBotInRoom(room, 'talk_bot');
  }

  /** A message in Talk and its webhook to a web process (200 expected). */
  async say(room: string, uid: string, text: string, web = this.web()): Promise<void> {
    const msg = this.#nc.postMessage(room, { actorType: 'users', actorId: uid }, text);
    const r = await fetch(`${web.url}/talk_bot`, { method: 'POST', headers: system(), body: this.#nc.webhookBodyFor(msg) });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
  }

  /** The bot's accepted messages in `room`, oldest first. */
  replies(room: string): string[] {
    return this.#nc.botMessages.filter((m) => m.token === room && m.status === 201).map((m) => m.message);
  }

  async close(): Promise<void> {
    for (const p of this.processes) await p.app.kill();
    await this.#tdb.drop();
  }
}
