/**
 * `make chat BOT=<mention> USER=<uid> [ROOM=<token>] [REVIEW=1]`: a terminal conversation with a bot
 * through the application's own pipeline (router, onboarding, turn, tools as USER through the real
 * Nextcloud client, confirmations), with the configured Nextcloud, model and database (`make run`'s
 * defaults). Each typed line is a Talk message from USER; what the bot would post is printed.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config/env.ts';
import { issueForOperator } from '../nextcloud/identity.ts';
import { isValidMention } from '../talk/mention-detector.ts';
import { RoomInfo } from '../talk/room-info.ts';
import { SHARED_NAME, SHARED_ROUTE } from '../talk/talk-identities.ts';
import { applyDevDefaults, devSecretFile } from './dev-env.ts';
import { formatForTerminal, TerminalTalk } from './terminal-talk.ts';

const USAGE =
  'usage: make chat BOT=<mention> USER=<uid> [ROOM=<token>] [REVIEW=1]  (node lib/cli/chat.ts --bot <mention> --user <uid> [--room <token>] [--review])';

function fail(message: string, code = 64): never {
  process.stderr.write(`educai chat: ${message}\n`);
  process.exit(code);
}

let args;
try {
  args = parseArgs({
    options: { bot: { type: 'string' }, user: { type: 'string' }, room: { type: 'string' }, review: { type: 'boolean' } },
    strict: true,
  }).values;
} catch (err) {
  fail(`${(err as Error).message}\n${USAGE}`);
}
const mention = (args.bot ?? '').replace(/^[@/]/, '').toLowerCase();
const uid = args.user ?? '';
const room = args.room?.trim() || null;
if (!mention || !uid) fail(USAGE);
if (!isValidMention(mention)) fail(`"${mention}" is not a bot mention (letters, digits, _ and -)`);
if (uid.length > 64 || /[\u0000-\u001f/\\\s]/.test(uid)) fail(`"${uid}" is not a Nextcloud user id`);
if (room !== null && !/^[A-Za-z0-9]{1,64}$/.test(room)) fail(`"${room}" is not a Talk room token`);

const env = process.env;
applyDevDefaults(env);
if (!env.APP_SECRET) {
  const file = devSecretFile(env);
  if (!existsSync(file)) fail(`no APP_SECRET: set it to the registered app's secret, or run \`make run\` once (it keeps one in ${file})`, 78);
  env.APP_SECRET = readFileSync(file, 'utf8').trim();
}
let config;
try {
  config = loadConfig({ ...env, LOG_LEVEL: env.LOG_LEVEL || 'warn' });
} catch (err) {
  if (err instanceof ConfigError) fail(`configuration error: ${err.message}`, 78);
  throw err;
}
// Only the Nextcloud client keeps the secret (S1).
delete env.APP_SECRET;
delete env.EDUCAI_VAULT_KEY;

const { buildApplication } = await import('../bootstrap.ts');
const { createLogger } = await import('../log/logger.ts');
// Logs go to stderr: stdout is the conversation.
const logger = createLogger({ level: config.logLevel, destination: process.stderr });
const names = new Map<string, string>([[SHARED_ROUTE, SHARED_NAME]]);
const talk = new TerminalTalk({
  uid,
  roomToken: room,
  reviewMode: args.review === true,
  print: (text, _message, route) => void process.stdout.write(formatForTerminal(names.get(route) ?? route, text)),
});
const application = await buildApplication(config, { logger, startWorker: false, talk: talk.seams });

async function stop(code: number): Promise<never> {
  await application.close().catch(() => undefined);
  process.exit(code);
}

const bot = await application.bots.getByMention(mention);
if (!bot || !bot.active) {
  const known = [...(await application.bots.activeMentions()).keys()].map((m) => `@${m}`).join(', ');
  process.stderr.write(`educai chat: no active bot @${mention}${known ? ` (active: ${known})` : ''}\n`);
  await stop(65);
}
// The names of our bots' own Talk identities, as Talk shows them.
for (const r of await application.identities.routes()) {
  const b = r.botId ? await application.bots.get(r.botId) : null;
  if (b) names.set(r.route, b.displayName);
}
if (room !== null && (await new RoomInfo(application.nextcloud).forUser(issueForOperator(uid), room)) === null) {
  process.stderr.write(`educai chat: ${uid} is not in the Talk room ${room} (or it does not exist)\n`);
  await stop(65);
}
// In a real room, messages come through the identity Talk delivers them through there, and the session
// records no identity as seen in the room that Talk has not delivered through.
let forgetShared = talk.virtual;
if (room !== null && bot && !(await application.identities.seenIn(room, SHARED_ROUTE))) {
  const own = (await application.identities.routes()).find((r) => r.botId === bot.id)?.route;
  if (own && (await application.identities.seenIn(room, own))) talk.route = own;
  else forgetShared = true;
}

process.stderr.write(
  [
    `Talking to @${mention} as ${uid} ${room ? `with the context of Talk room ${room} (memory and documents; nothing is posted there)` : 'in a room of this session only (a one-to-one room; forgotten at the end)'}.`,
    ...(args.review ? ['Reviewer mode (S10): tools that can change data are dry runs, shown and not run.'] : []),
    `Each line is a message to @${mention} (start it with @other or ((RESET)) to send it as typed); confirm a write with "yes <code>"; Ctrl-D ends.`,
    '',
  ].join('\n') + '\n',
);

// The prompt only for a person at a terminal; piped input gets the printed messages alone.
const rl = createInterface(process.stdin.isTTY ? { input: process.stdin, output: process.stdout, terminal: true } : { input: process.stdin, terminal: false });
rl.setPrompt(`${uid}> `);
rl.on('SIGINT', () => rl.close());
process.on('SIGINT', () => rl.close());
process.on('SIGTERM', () => rl.close());
if (process.stdin.isTTY) rl.prompt();
for await (const line of rl) {
  const typed = line.trim();
  if (typed !== '') {
    const text = /^[@/]|^\(\(/.test(typed) ? typed : `@${mention} ${typed}`;
    try {
      const outcome = await application.processor.process(talk.message(text));
      if (outcome !== 'answered') process.stderr.write(`(no answer: ${outcome})\n`);
    } catch (err) {
      process.stderr.write(`educai chat: the message failed: ${(err as Error).message}\n`);
    }
  }
  if (process.stdin.isTTY) rl.prompt();
}

// The session's own room leaves nothing behind: onboarding, memory and room documents go as with ((RESET)).
if (talk.virtual)
  await talk
    .quietly(() => application.processor.process(talk.message('((RESET))')))
    .catch((err: unknown) => logger.warn({ err }, 'could not clear the terminal room'));
if (forgetShared) await application.identities.forgetRoom(talk.roomToken, SHARED_ROUTE).catch(() => undefined);
await stop(0);
