// The whole product against the real Nextcloud 33: the ExApp as its own process, registered through the
// `manual_install` daemon exactly as an admin registers it, reached by Talk and users through AppAPI.
// The only fake is the model (test/fakes/openai/fake-openai.ts).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonInfoRoutes, readManifest } from '../../lib/appapi/manifest.ts';
import type { Dialect } from '../../lib/storage/database.ts';
import { FakeOpenAI } from '../fakes/openai/fake-openai.ts';
import { createTestDatabase } from '../helpers/databases.ts';
import { ExAppProcess, exAppEnv, freePort } from '../helpers/exapp-process.ts';
import { waitFor } from '../helpers/harness.ts';
import { RealNextcloud, type ChatMessage, type User } from './nextcloud.ts';

export const LLM_KEY = 'sk-real-nextcloud-suite-0123456789';
const manifest = readManifest(new URL('../../appinfo/info.xml', import.meta.url).pathname);

export interface Stack {
  nc: RealNextcloud;
  llm: FakeOpenAI;
  app: ExAppProcess;
  secret: string;
  logFile: string;
  /** The ExApp's configuration (secret, Nextcloud, data folder, database), e.g. for `make chat`'s CLI beside it. */
  env: Record<string, string>;
  /** AppAPI's headers for a call straight to the ExApp (`uid` '' = the system, as webhooks arrive). */
  appApiHeaders(uid: string): Record<string, string>;
  /** Waits until the ExApp has no Talk event left to process (its inbox backlog, read as the admin). */
  idle(timeoutMs?: number): Promise<void>;
  /** Creates a bot as `owner` through the app's API (AppAPI proxy) and assigns `tools`. */
  createBot(owner: User, mention: string, tools?: string[], displayName?: string): Promise<{ id: string; mention: string }>;
  /** A group room of `owner` with `participants` and the shared "Talk AI" bot enabled. */
  room(owner: User, participants: User[]): Promise<string>;
  /** Posts and waits for the answer: the bot messages that came after the post. */
  ask(user: User, token: string, text: string): Promise<ChatMessage[]>;
  /** Goes through a bot's first-mention onboarding in `token`, choosing "answer on mention" (A). */
  onboard(user: User, token: string, mention: string): Promise<void>;
  /** The lines of the ExApp's log (JSON, one object per line). */
  log(): string[];
  stop(): Promise<void>;
}

let suffix = 0;
/** A name no earlier run on the same server used (the server keeps its rooms and files between runs). */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}${(suffix++).toString(36)}`;
}

export async function registerExApp(nc: RealNextcloud, secret: string, port: number): Promise<void> {
  const info = {
    id: manifest.id,
    name: manifest.name,
    daemon_config_name: 'manual_install',
    version: manifest.version,
    secret,
    port,
    routes: jsonInfoRoutes(manifest),
  };
  await nc.occ('app_api:app:register', manifest.id, 'manual_install', '--json-info', JSON.stringify(info), '--wait-finish');
}

export async function unregisterExApp(nc: RealNextcloud): Promise<void> {
  await nc.occ('app_api:app:unregister', manifest.id, '--force').catch(() => '');
}

/** The ExApp's row in `occ app_api:app:list` ("educai (Talk AI): 0.1.0 [enabled]"), or null. */
export async function exAppListing(nc: RealNextcloud): Promise<string | null> {
  const out = await nc.occ('app_api:app:list');
  return out.split('\n').find((l) => l.startsWith(`${manifest.id} `)) ?? null;
}

export async function talkBotNames(nc: RealNextcloud): Promise<string[]> {
  const out = await nc.occ('talk:bot:list', '--output=json');
  return (JSON.parse(out) as Array<{ name: string }>).map((b) => b.name);
}

export async function startStack(options: { dialect?: Dialect } = {}): Promise<Stack> {
  const nc = new RealNextcloud();
  const llm = await FakeOpenAI.start({ models: ['fake-model'], apiKey: LLM_KEY });
  const tdb = await createTestDatabase(options.dialect ?? 'sqlite', { migrate: false });
  await tdb.close();
  const secret = randomBytes(32).toString('base64url');
  const port = await freePort();
  const logDir = mkdtempSync(join(tmpdir(), 'educai-real-nc-'));
  const logFile = join(logDir, 'exapp.log');
  const env = exAppEnv(nc.url, tdb, { APP_ID: manifest.id, APP_SECRET: secret, APP_VERSION: manifest.version });
  const app = new ExAppProcess(port, { ...env, LOG_LEVEL: 'info' }, { logFile });
  await unregisterExApp(nc);
  await app.start();
  await registerExApp(nc, secret, port);

  const admin = async (method: string, path: string, body: unknown) => {
    const r = await nc.proxy('admin', method, path, body);
    assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
  };
  // The fake model listens on 127.0.0.1, which the egress module reaches only when the admin allow-lists it.
  await admin('PUT', '/api/v1/admin/egress', { allowList: ['127.0.0.1'] });
  await admin('PUT', '/api/v1/admin/settings', { primaryEndpoint: llm.url, primaryKey: LLM_KEY, defaultModel: 'primary:fake-model' });

  const stack: Stack = {
    nc,
    llm,
    app,
    secret,
    logFile,
    env,
    appApiHeaders: (uid) => ({
      'EX-APP-ID': manifest.id,
      'EX-APP-VERSION': manifest.version,
      'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${secret}`).toString('base64'),
    }),
    async idle(timeoutMs = 60_000) {
      await waitFor(
        async () => {
          const r = await nc.proxy('admin', 'GET', '/api/v1/admin/runtime');
          return r.status === 200 && r.data?.inboxBacklog === 0;
        },
        'the ExApp to finish its Talk events',
        timeoutMs,
      );
    },
    async createBot(owner, mention, tools = [], displayName = mention) {
      const r = await nc.proxy(owner, 'POST', '/api/v1/bots', { displayName, mention, systemPrompt: `You are ${mention}.` });
      assert.equal(r.status, 201, r.text);
      const bot = r.data.bot as { id: string; mention: string };
      if (tools.length > 0) {
        const t = await nc.proxy(owner, 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: tools.map((name) => ({ name, config: {} })) });
        assert.equal(t.status, 200, t.text);
      }
      return bot;
    },
    async room(owner, participants) {
      const token = await nc.createRoom(owner, unique('room'), participants);
      await nc.enableBot(owner, token);
      return token;
    },
    async ask(user, token, text) {
      const before = (await nc.chat(user, token)).at(-1)?.id ?? 0;
      await nc.post(user, token, text);
      await stack.idle();
      return (await nc.botMessages(user, token)).filter((m) => m.id > before);
    },
    async onboard(user, token, mention) {
      const question = await stack.ask(user, token, `@${mention}`);
      assert.match(question.map((m) => m.message).join('\n'), /\bA\b[\s\S]*\bB\b/, 'the onboarding question');
      await stack.ask(user, token, 'A');
    },
    log: () => readFileSync(logFile, 'utf8').split('\n').filter(Boolean),
    async stop() {
      await unregisterExApp(nc);
      await app.kill('SIGTERM');
      await llm.close();
      await tdb.drop();
      if (process.env.EDUCAI_KEEP_LOGS) process.stderr.write(`ExApp log kept in ${logFile}\n`);
      else rmSync(logDir, { recursive: true, force: true });
    },
  };
  return stack;
}
