// Wires the wiki: root registry, service, tool provider, assignment hooks (expand to all four
// tools, initialise on save), and the index sync (debounced scheduler + periodic etag scan).
// The scan runs only where the Talk worker runs (processing role), never in the HTTP role.
import type { Kysely } from 'kysely';
import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudError } from '../nextcloud/errors.ts';
import { issueForStoredPrincipal } from '../nextcloud/identity.ts';
import type { Database } from '../storage/schema.ts';
import { FilesDav } from '../nextcloud/files-dav.ts';
import { ToolAssignmentError, type AssignmentHooks } from '../tools/tool-assignments.ts';
import type { ToolAssignment } from '../tools/tool-registry.ts';
import { expandWikiAssignments, isWikiTool, locationOf } from './wiki-config.ts';
import { toUserPath } from './wiki-files.ts';
import { checkCollectiveRoot, checkPersonalRoot } from './wiki-guard.ts';
import { WikiToolProvider } from './wiki-provider.ts';
import { WikiRootStore, type WikiRoot } from './wiki-roots.ts';
import { WikiRefusal, WikiService, type TeamOfUser, type WikiBot, type WikiHandle, type WikiServiceOptions } from './wiki-service.ts';
import { WikiScanner, WikiSyncScheduler } from './wiki-sync.ts';

export const DEFAULT_SCAN_INTERVAL_MS = 60_000;

export interface WikiModuleOptions {
  db: Kysely<Database>;
  nextcloud: NextcloudClient;
  bot(botId: string): Promise<WikiBot | null>;
  /** A bot's current wiki assignment config (any wiki tool; they share one). */
  assignments(botId: string): Promise<ToolAssignment[]>;
  teamsOf(user: ReturnType<typeof issueForStoredPrincipal>): Promise<TeamOfUser[]>;
  /** Where a team's Collective is in a member's files, from the Collectives API as that member (collective-folder.ts). */
  collectiveFolder: WikiServiceOptions['collectiveFolder'];
  logger: Logger;
  now?: () => number;
  debounceMs?: number;
  eventDebounceMs?: number;
  scanIntervalMs?: number;
}

export interface WikiModule {
  roots: WikiRootStore;
  service: WikiService;
  provider: WikiToolProvider;
  scheduler: WikiSyncScheduler;
  scanner: WikiScanner;
  /** Install with ToolAssignmentStore.useHooks. */
  assignmentHooks: AssignmentHooks;
  /** Syncs one registered root now, as its registered user (what the scheduler runs). */
  syncRoot(botId: string): Promise<void>;
  /** Starts the periodic scan (processing role only). */
  start(): void;
  forgetBot(botId: string): Promise<void>;
  close(): Promise<void>;
}

export function createWikiModule(o: WikiModuleOptions): WikiModule {
  const roots = new WikiRootStore(o.db, o.now);
  const service = new WikiService({
    nextcloud: o.nextcloud,
    roots,
    teamsOf: o.teamsOf,
    collectiveFolder: o.collectiveFolder,
    logger: o.logger,
    ...(o.now ? { now: o.now } : {}),
  });
  const provider = new WikiToolProvider({
    service,
    bot: o.bot,
    // A confirmed write runs with the bot's config as it is then, not as it was when asked.
    config: async (botId) => (await o.assignments(botId)).find((a) => isWikiTool(a.name))?.config ?? null,
  });

  /** The registered root as its registered user sees it, followed by file id when it moved. */
  async function locate(root: WikiRoot): Promise<{ handle: WikiHandle; etag: string } | null> {
    const bot = await o.bot(root.botId);
    if (!bot) return null;
    const user = issueForStoredPrincipal(root.uid);
    const dav = new FilesDav(o.nextcloud.as(user));
    let path = toUserPath(root.rootPath);
    let info = await dav.stat(path);
    if (!info || (root.rootFileId !== '' && info.fileId !== root.rootFileId)) {
      const moved = root.rootFileId !== '' ? await dav.findById(root.rootFileId) : null;
      if (!moved || moved.type !== 'folder') return null;
      path = toUserPath(moved.path);
      info = moved;
    }
    const config = (await o.assignments(root.botId)).find((a) => isWikiTool(a.name))?.config ?? {};
    const location = locationOf(config);
    return { handle: { bot, user, location, root: path, dav }, etag: info.etag };
  }

  async function syncRoot(botId: string): Promise<void> {
    const root = await roots.get(botId);
    if (!root) return;
    const found = await locate(root);
    if (!found) return;
    // S16 before writing index.md: still the user's own folder (or an editable Collective: the
    // stored root is the Collective's folder as the Collectives API gave it to this user, followed by file id).
    if (found.handle.location.kind === 'collective') await checkCollectiveRoot(found.handle.dav, found.handle.root);
    else if (!(await checkPersonalRoot(found.handle.dav, found.handle.root)).root) return;
    await service.syncIndex(found.handle);
  }

  const scheduler = new WikiSyncScheduler({
    sync: syncRoot,
    logger: o.logger,
    ...(o.debounceMs !== undefined ? { debounceMs: o.debounceMs } : {}),
    ...(o.eventDebounceMs !== undefined ? { eventDebounceMs: o.eventDebounceMs } : {}),
  });
  const scanner = new WikiScanner({
    roots,
    scheduler,
    logger: o.logger,
    etagOf: async (botId) => {
      const root = await roots.get(botId);
      if (!root) return null;
      const found = await locate(root);
      return found?.etag ?? null;
    },
  });

  const assignmentHooks: AssignmentHooks = {
    expand: expandWikiAssignments,
    // Initialise when wiki tools are saved: as the bot's owner, who configures it (S16 checks included).
    beforeSave: async (botId, assignments, scope) => {
      const wiki = assignments.find((a) => isWikiTool(a.name));
      if (!wiki) return;
      const stored = await o.bot(botId);
      if (!stored) return;
      const bot = scope ? { ...stored, visibility: scope.visibility, allowedTeams: scope.allowedTeams } : stored;
      if (bot.visibility !== 'personal' && bot.visibility !== 'teams')
        throw new ToolAssignmentError('wiki tools are only available to personal bots and team bots');
      try {
        const handle = await service.open(bot, wiki.config, issueForStoredPrincipal(bot.ownerUid));
        await service.initialise(handle);
      } catch (err) {
        if (err instanceof WikiRefusal) throw new ToolAssignmentError(`wiki: ${err.message}`);
        // Nextcloud unreachable: the save stands, the wiki is initialised on first use.
        if (err instanceof NextcloudError || (err instanceof Error && err.name === 'DavParseError')) {
          o.logger.warn({ err, bot: botId }, 'wiki not initialised on save; it will be on first use');
          return;
        }
        throw err;
      }
    },
  };

  return {
    roots,
    service,
    provider,
    scheduler,
    scanner,
    assignmentHooks,
    syncRoot,
    start: () => scanner.start(o.scanIntervalMs ?? DEFAULT_SCAN_INTERVAL_MS),
    forgetBot: async (botId) => roots.remove(botId),
    close: async () => {
      scanner.stop();
      scheduler.close();
    },
  };
}
