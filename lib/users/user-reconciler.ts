// S21: deletion follows Nextcloud. Once a day the app compares the accounts it holds data for
// with AppAPI's user list: data of deleted accounts is purged (so a re-created uid starts
// empty), and bots of disabled or deleted owners stop answering.
import { sql, type Kysely } from 'kysely';
import { isPublished } from '../bots/bot-access.ts';
import type { BotStore } from '../bots/bot-store.ts';
import type { Logger } from '../log/logger.ts';
import { issueForStoredPrincipal, type ActingUser } from '../nextcloud/identity.ts';
import type { Database } from '../storage/schema.ts';
import type { UserDirectory } from './user-directory.ts';
import type { UserStates } from './user-states.ts';

export const RECONCILE_INTERVAL_MS = 24 * 3600_000;

export interface ReconcileReport {
  at: number;
  /** Accounts AppAPI listed. */
  listed: number;
  gone: string[];
  disabled: string[];
  enabledAgain: string[];
  botsDeleted: string[];
  botsStopped: string[];
  /** Whether owners' enabled flags could be read (needs an admin seen by the app). */
  enabledChecked: boolean;
  /** Set when the run changed nothing because the answer looked wrong. */
  skipped: string | null;
}

export interface UserReconcilerDeps {
  db: Kysely<Database>;
  directory: Pick<UserDirectory, 'listUids' | 'isEnabled'>;
  states: UserStates;
  bots: Pick<BotStore, 'listByOwner'>;
  /** Fresh admin check for the account whose view reads the enabled flags. */
  isAdmin: (user: ActingUser) => Promise<boolean>;
  deleteBot: (botId: string) => Promise<unknown>;
  clearTraces: (uid: string) => Promise<unknown>;
  /** Conversation memory of an author (`users/<uid>`, with the answers to them) or an invoker (`<uid>`). */
  forgetMemory: (authorOrInvoker: string) => Promise<unknown>;
  /** Other per-user data (room documents a user posted, …). */
  purgers?: Array<(uid: string) => Promise<unknown>>;
  /** After bots were stopped or deleted: routing caches reload. */
  onBotsChanged?: () => Promise<void>;
  logger: Logger;
  now?: () => number;
  /** A list that would make more than this share of known accounts vanish is not trusted (default 0.5). */
  maxGoneShare?: number;
}

export class UserReconciler {
  readonly #d: UserReconcilerDeps;
  readonly #now: () => number;
  #running: Promise<ReconcileReport> | null = null;
  last: ReconcileReport | null = null;

  constructor(deps: UserReconcilerDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  run(): Promise<ReconcileReport> {
    this.#running ??= this.#run().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #run(): Promise<ReconcileReport> {
    const d = this.#d;
    const report: ReconcileReport = {
      at: this.#now(),
      listed: 0,
      gone: [],
      disabled: [],
      enabledAgain: [],
      botsDeleted: [],
      botsStopped: [],
      enabledChecked: false,
      skipped: null,
    };
    const listed = new Set(await d.directory.listUids());
    report.listed = listed.size;
    const known = await this.#knownUids();
    const gone = [...known].filter((uid) => !listed.has(uid)).sort();
    const share = d.maxGoneShare ?? 0.5;
    // An empty or truncated list (a user backend outage) must not wipe everyone's data.
    if (listed.size === 0 || (gone.length > 1 && gone.length > known.size * share)) {
      report.skipped = `AppAPI listed ${listed.size} accounts, which would remove ${gone.length} of ${known.size} known ones; nothing was changed`;
      d.logger.error({ listed: listed.size, gone: gone.length, known: known.size }, 'user reconciliation skipped: the user list looks incomplete');
      this.last = report;
      return report;
    }
    let botsChanged = false;
    for (const uid of gone) {
      const r = await this.#purge(uid);
      report.botsDeleted.push(...r.deleted);
      report.botsStopped.push(...r.stopped);
      botsChanged ||= r.deleted.length + r.stopped.length > 0;
      await d.states.set(uid, 'gone');
      report.gone.push(uid);
    }
    // A uid that was gone and exists again is a new account: its old data is already purged.
    for (const uid of await this.#uidsWithStatus('gone')) if (listed.has(uid)) await d.states.set(uid, 'active');

    const admin = await this.#readingAdmin(listed);
    if (admin) {
      report.enabledChecked = true;
      const owners = await d.db.selectFrom('bots').select('owner_uid').distinct().execute();
      const wasDisabled = new Set(await this.#uidsWithStatus('disabled'));
      for (const { owner_uid: uid } of owners) {
        if (!listed.has(uid)) continue;
        const enabled = await d.directory.isEnabled(admin, uid).catch((err: unknown) => {
          d.logger.warn({ err, uid }, 'could not read an account’s enabled flag');
          return null;
        });
        if (enabled === false && !wasDisabled.has(uid)) {
          await d.states.set(uid, 'disabled');
          report.disabled.push(uid);
        } else if (enabled === true && wasDisabled.has(uid)) {
          await d.states.set(uid, 'active');
          report.enabledAgain.push(uid);
        }
      }
      botsChanged ||= report.disabled.length + report.enabledAgain.length > 0;
    } else {
      d.logger.warn('user reconciliation could not read enabled flags: no administrator has used Talk AI’s administration yet');
    }
    if (botsChanged) await d.onBotsChanged?.().catch((err: unknown) => d.logger.warn({ err }, 'could not reload bots after reconciliation'));
    d.logger.info(
      {
        listed: report.listed,
        gone: report.gone.length,
        disabled: report.disabled.length,
        enabledAgain: report.enabledAgain.length,
        botsDeleted: report.botsDeleted.length,
        botsStopped: report.botsStopped.length,
      },
      'users reconciled with Nextcloud',
    );
    this.last = report;
    return report;
  }

  /** Every uid the app holds data for. */
  async #knownUids(): Promise<Set<string>> {
    const db = this.#d.db;
    const lists = await Promise.all([
      db.selectFrom('bots').select('owner_uid as uid').distinct().execute(),
      db.selectFrom('user_states').select('uid').where('status', '!=', 'gone').execute(),
      // Talk authors are stored as actor ids: `users/<uid>` are Nextcloud accounts.
      db
        .selectFrom('conversation_messages')
        .select(sql<string>`substr(author_uid, 7)`.as('uid'))
        .distinct()
        .where('author_uid', 'like', 'users/%')
        .execute(),
      db.selectFrom('conversation_messages').select('invoker_uid as uid').distinct().where('invoker_uid', '!=', '').execute(),
      db.selectFrom('trace_runs').select('uid').distinct().execute(),
      db.selectFrom('pending_confirmations').select('user_uid as uid').distinct().execute(),
      db.selectFrom('request_queue').select('uid').distinct().where('uid', 'is not', null).execute(),
    ]);
    const out = new Set<string>();
    for (const rows of lists) for (const r of rows) if (typeof r.uid === 'string' && r.uid !== '' && !r.uid.includes('/')) out.add(r.uid);
    return out;
  }

  async #uidsWithStatus(status: 'gone' | 'disabled'): Promise<string[]> {
    return (await this.#d.db.selectFrom('user_states').select('uid').where('status', '=', status).execute()).map((r) => r.uid);
  }

  /** The most recently seen admin who still exists and still is one. */
  async #readingAdmin(listed: Set<string>): Promise<ActingUser | null> {
    for (const uid of await this.#d.states.knownAdmins()) {
      if (!listed.has(uid)) continue;
      const user = issueForStoredPrincipal(uid);
      if (await this.#d.isAdmin(user).catch(() => false)) return user;
      await this.#d.states.forget(uid);
    }
    return null;
  }

  async #purge(uid: string): Promise<{ deleted: string[]; stopped: string[] }> {
    const d = this.#d;
    const deleted: string[] = [];
    const stopped: string[] = [];
    for (const bot of await d.bots.listByOwner(uid)) {
      // A published shared bot serves others: it stops (and never resumes for a re-created uid)
      // until an administrator decides; everything else of the owner goes.
      if (bot.visibility !== 'personal' && isPublished(bot)) {
        await d.db.updateTable('bots').set({ active: 0, updated_at: this.#now() }).where('id', '=', bot.id).execute();
        stopped.push(bot.id);
      } else {
        await d.deleteBot(bot.id);
        deleted.push(bot.id);
      }
    }
    await d.forgetMemory(`users/${uid}`);
    await d.forgetMemory(uid);
    await d.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('pending_confirmations').where('user_uid', '=', uid).execute();
      await trx.deleteFrom('request_queue').where('uid', '=', uid).execute();
      await trx.deleteFrom('rate_limit_counters').where('level', '=', 'user').where('subject', '=', uid).execute();
      await trx.updateTable('bots').set({ tester_uid: null }).where('tester_uid', '=', uid).execute();
    });
    await d.clearTraces(uid);
    for (const purge of d.purgers ?? []) await purge(uid);
    return { deleted, stopped };
  }
}
