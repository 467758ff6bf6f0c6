// The four wiki tools as a core ToolProvider. The acting user is the context's user (set by the
// server from the verified Talk author), never an argument; the location is the assignment's
// server-side config. Results are pretty JSON, as upstream.
// Writes after untrusted content entered the turn (S6) are not refused but stored as pending
// actions bound to the page's etag and the root's file id; they run when the invoker answers
// "yes <code>" (S7, lib/confirmations), after the S16 checks ran again as that user.
import { isTurnTainted } from '../tools/turn-taints.ts';
import type { ConfirmationExecutor, StoredAction } from '../tools/confirmable.ts';
import { NextcloudError } from '../nextcloud/errors.ts';
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ConfirmationRequester } from '../tools/first-party-provider.ts';
import { InvalidArgumentError } from '../tools/files/user-paths.ts';
import { readPolicy, searchPolicy, writePolicy } from '../tools/tool-policy.ts';
import {
  errorResult,
  textResult,
  type ConfigValidation,
  type InvocationContext,
  type ToolDefinition,
  type ToolMetadata,
  type ToolProvider,
  type ToolResult,
  turnOf,
} from '../tools/tool-provider.ts';
import { isWikiTool, validateWikiConfig } from './wiki-config.ts';
import { PageTooLargeError } from './wiki-files.ts';
import { WikiRefusal, type WikiBot, type WikiHandle, type WikiService, type WriteMode } from './wiki-service.ts';
import { byteLength, DEFAULT_READ_LIMIT, MAX_READ_LIMIT } from '../tools/page-text.ts';

export const WIKI_PROVIDER_ID = 'wiki';
const MAX_QUERY_CHARS = 500;
const MAX_CONTENT_CHARS = 600_000;
const TAINTED_REASON = "this conversation turn contains content you did not type (a wiki page, another tool's result or another person's message)";
/** Binding value of a page that did not exist when the confirmation was asked for. */
const ABSENT = 'absent';

const DEFINITIONS: ToolDefinition[] = [
  {
    name: 'wiki_search',
    description:
      "Search the bot's persistent wiki (Markdown pages in Nextcloud) before answering from it. Ranked by relevance; hits in page paths count more. " +
      'scope "wiki" searches the pages, "sources" the sources/ folder, "all" both.',
    schema: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'Keywords to look for' },
        limit: { type: 'integer', default: 5, description: 'Results to return, 1 to 20' },
        scope: { type: 'string', enum: ['wiki', 'sources', 'all'], default: 'wiki' },
      },
      required: ['query'],
    },
    policy: searchPolicy(),
    label: 'Wiki Search',
    summary: "Search the bot's wiki pages",
    requiresUser: true,
  },
  {
    name: 'wiki_read_page',
    description: `Read a wiki page in chunks of characters (default ${DEFAULT_READ_LIMIT}, at most ${MAX_READ_LIMIT}). When has_more is true, call again with offset = next_offset.`,
    schema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Page path relative to the wiki, e.g. "topics/fractions.md"' },
        offset: { type: 'integer', default: 0, description: 'Character offset to start at' },
        limit: { type: 'integer', default: DEFAULT_READ_LIMIT, description: `Characters to return (at most ${MAX_READ_LIMIT})` },
      },
      required: ['path'],
    },
    policy: readPolicy(),
    label: 'Wiki Read Page',
    summary: 'Read a wiki page',
    requiresUser: true,
  },
  {
    name: 'wiki_write_page',
    description:
      'Save a wiki page (.md, .txt or .json, at most 512 KiB). mode "create" refuses an existing page; "overwrite" replaces it; "append" adds to its end. ' +
      'Pass the etag from wiki_read_page to make sure nobody changed the page since you read it. Only save when the user asks; the answer says whether it was saved.',
    schema: {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'Page path relative to the wiki' },
        content: { type: 'string' },
        mode: { type: 'string', enum: ['create', 'overwrite', 'append'], default: 'create' },
        reason: { type: 'string', description: 'Why the page changes (for the log)' },
        etag: { type: 'string', description: 'The etag wiki_read_page returned; the write fails if the page changed since' },
      },
      required: ['path', 'content'],
    },
    policy: writePolicy(),
    label: 'Wiki Write Page',
    summary: 'Create, overwrite or append to a wiki page',
    requiresUser: true,
  },
  {
    name: 'wiki_log_event',
    description: "Add a dated entry to the wiki's log.md (what changed and why).",
    schema: {
      type: 'object',
      properties: { title: { type: 'string', description: 'At most 160 characters' }, details: { type: 'string' } },
      required: ['title'],
    },
    policy: writePolicy(),
    label: 'Wiki Log Event',
    summary: "Record an entry in the wiki's log",
    requiresUser: true,
  },
];

export interface WikiProviderOptions {
  service: WikiService;
  bot(botId: string): Promise<WikiBot | null>;
  /** The bot's wiki config now (shared by its wiki tools); null when no wiki tool is assigned. */
  config?(botId: string): Promise<Record<string, unknown> | null>;
  /** Without it (or `useConfirmations`), writes that need a confirmation are refused. */
  confirmations?: ConfirmationRequester | null;
  /** Whether untrusted content entered the turn (S6); default: the turn's taint. */
  isTainted?: (ctx: InvocationContext) => boolean;
}

function json(value: unknown, isError = false): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], isError };
}

function stringArg(args: Record<string, unknown>, key: string, max: number, required: boolean): string | null {
  const v = args[key];
  if (v === undefined || v === null) {
    if (required) throw new InvalidArgumentError(`${key} is required`);
    return null;
  }
  if (typeof v !== 'string') throw new InvalidArgumentError(`${key} must be a string`);
  if (v.length > max) throw new InvalidArgumentError(`${key} is too long (at most ${max} characters)`);
  return v;
}

export class WikiToolProvider implements ToolProvider, ConfirmationExecutor {
  readonly id = WIKI_PROVIDER_ID;
  readonly #o: WikiProviderOptions;
  #confirmations: ConfirmationRequester | null;
  /** Turns in which a wiki page or search result entered the context (S6). */
  readonly #readInTurn = new WeakSet<InvocationContext>();

  constructor(options: WikiProviderOptions) {
    this.#o = options;
    this.#confirmations = options.confirmations ?? null;
  }

  /** The confirmation service is built after the wiki (composition root). */
  useConfirmations(confirmations: ConfirmationRequester): void {
    this.#confirmations = confirmations;
  }

  isTainted(ctx: InvocationContext): boolean {
    return this.#readInTurn.has(turnOf(ctx)) || (this.#o.isTainted ?? isTurnTainted)(ctx);
  }

  /** Listed for the catalogue and for personal and team bots; other bots do not get them (upstream). */
  async getTools(ctx: InvocationContext | null): Promise<ToolDefinition[]> {
    if (ctx === null) return DEFINITIONS;
    const bot = await this.#o.bot(ctx.botId);
    return bot && (bot.visibility === 'personal' || bot.visibility === 'teams') ? DEFINITIONS : [];
  }

  providesTool(name: string): boolean {
    return isWikiTool(name);
  }

  getToolMetadata(): Record<string, ToolMetadata> {
    const out: Record<string, ToolMetadata> = {};
    for (const d of DEFINITIONS) out[d.name] = { label: d.label ?? d.name, summary: d.summary ?? '', family: 'wiki' };
    return out;
  }

  validateConfig(name: string, config: Record<string, unknown>): ConfigValidation {
    if (!isWikiTool(name)) return { ok: false, errors: { name: 'unknown tool' } };
    return validateWikiConfig(config);
  }

  async executeTool(name: string, args: Record<string, unknown>, config: Record<string, unknown>, ctx: InvocationContext): Promise<ToolResult> {
    if (!isWikiTool(name)) return errorResult(`ERROR: Unknown tool ${name}.`);
    const user = ctx.user;
    if (user === null || ctx.actorKind !== 'user') return errorResult('ERROR: wiki tools act as a signed-in Nextcloud user and are not available here.');
    const bot = await this.#o.bot(ctx.botId);
    if (!bot) return errorResult('ERROR: wiki tools are unavailable: the bot no longer exists.');
    try {
      const h = await this.#o.service.open(bot, config, user);
      const result = await this.#run(name, args, h, ctx);
      if ((name === 'wiki_search' || name === 'wiki_read_page') && !result.isError) this.#readInTurn.add(turnOf(ctx));
      return result;
    } catch (err) {
      return refusal(name, err);
    }
  }

  /**
   * Runs a confirmed write (ConfirmationExecutor) as the confirming user: the wiki is opened
   * again with the bot's current config (S16 checks as that user), must still be at the stored
   * root with the stored file id, and the page must be as it was (same etag, or still absent).
   */
  async executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult> {
    const name = action.tool;
    if (name !== 'wiki_write_page' && name !== 'wiki_log_event') return errorResult(`ERROR: The tool ${name} cannot be confirmed.`);
    if (user.uid !== action.userUid) return errorResult('ERROR: Only the user who asked can confirm this.');
    const bot = await this.#o.bot(action.botId);
    if (!bot) return errorResult('ERROR: wiki tools are unavailable: the bot no longer exists.');
    const config = this.#o.config ? await this.#o.config(action.botId) : null;
    if (config === null) return errorResult('ERROR: the wiki tools are no longer assigned to this bot.');
    const s = this.#o.service;
    try {
      const h = await s.open(bot, config, user);
      if (h.root.relative !== action.args['wikiRoot'])
        throw new WikiRefusal('The wiki has moved to another place since the confirmation was asked for; nothing was written.');
      if ((await s.rootFileId(h)) !== action.binding['rootFileId'])
        throw new WikiRefusal('The wiki folder was replaced since the confirmation was asked for; nothing was written.');
      if (name === 'wiki_log_event') {
        const done = await s.logEvent(h, String(action.args['title']), String(action.args['details'] ?? ''));
        return json({ success: true, action: 'logged', wiki_root: h.root.relative, path: done.path, entry: done.entry });
      }
      const path = String(action.args['path']);
      const content = String(action.args['content']);
      const expected = action.binding['page'];
      const now = await s.pageEtag(h, path);
      if (expected === ABSENT ? now !== null : now !== expected) {
        throw new WikiRefusal(`The page "${path}" changed since the confirmation was asked for; nothing was written. Read it again and ask again.`);
      }
      // An absent page is created (If-None-Match); an existing one changes only with its bound etag (If-Match).
      const mode: WriteMode = expected === ABSENT ? 'create' : action.args['mode'] === 'append' ? 'append' : 'overwrite';
      const done = await s.write(h, path, content, mode, expected === ABSENT ? null : String(expected));
      return json({ success: true, action: done.action, path: done.path, wiki_root: h.root.relative, file_id: done.fileId, size: done.size, etag: done.etag });
    } catch (err) {
      return refusal(name, err);
    }
  }

  /** Stores the prepared write as a pending action and asks the invoker, instead of writing. */
  async #ask(
    ctx: InvocationContext,
    tool: string,
    action: { args: Record<string, unknown>; binding: Record<string, unknown>; description: string },
  ): Promise<ToolResult> {
    const confirmations = this.#confirmations;
    if (!confirmations || ctx.roomToken === null || ctx.user === null) {
      return json(
        {
          success: false,
          action: actionOf(tool),
          error: `This needs the user's confirmation (${TAINTED_REASON}), which is only possible in a Talk conversation. Nothing was written.`,
        },
        true,
      );
    }
    const requested = await confirmations.requestConfirmation(ctx, { providerId: this.id, tool, ...action, reason: TAINTED_REASON }).catch(() => null);
    if (requested === null)
      return json({ success: false, action: actionOf(tool), error: 'The confirmation could not be recorded, so nothing will be written.' }, true);
    const delivered = await confirmations.deliver(ctx, requested);
    if (!delivered.posted && !delivered.notified) {
      await confirmations.cancel(requested.id);
      return json(
        {
          success: false,
          action: actionOf(tool),
          error: 'The confirmation request could not be sent to the user, so nothing will be written. Try again later.',
        },
        true,
      );
    }
    // The code stays out of the model's context: only the user's own reply can confirm.
    return textResult(
      `NOT DONE YET. The server asked ${ctx.user.uid} to confirm: ${action.description}. ` +
        "It is written only if they answer the server's confirmation message in this conversation within 10 minutes. " +
        "Do not say it is saved; tell the user to confirm or cancel as the server's message explains.",
    );
  }

  async #run(name: string, args: Record<string, unknown>, h: WikiHandle, ctx: InvocationContext): Promise<ToolResult> {
    const s = this.#o.service;
    const wikiRoot = h.root.relative;
    switch (name) {
      case 'wiki_search': {
        const query = stringArg(args, 'query', MAX_QUERY_CHARS, true) ?? '';
        if (query.trim() === '') throw new InvalidArgumentError('query must not be empty');
        const scopeArg = args['scope'] ?? 'wiki';
        if (scopeArg !== 'wiki' && scopeArg !== 'sources' && scopeArg !== 'all') throw new InvalidArgumentError('scope must be wiki, sources or all');
        const limitArg = typeof args['limit'] === 'number' ? Math.floor(args['limit']) : 5;
        const limit = Math.min(20, Math.max(1, Number.isFinite(limitArg) ? limitArg : 5));
        const found = await s.search(h, query, scopeArg, limit);
        return json({
          success: true,
          action: 'search',
          query,
          scope: scopeArg,
          wiki_root: wikiRoot,
          results: found.results,
          searched_files: found.searched_files,
          ...(found.truncated ? { truncated: true } : {}),
        });
      }
      case 'wiki_read_page': {
        const page = await s.read(h, args['path'], args['offset'], args['limit']);
        return json({ success: true, action: 'read', wiki_root: wikiRoot, ...page });
      }
      case 'wiki_write_page': {
        const content = stringArg(args, 'content', MAX_CONTENT_CHARS, true) ?? '';
        const modeArg = args['mode'] ?? 'create';
        if (modeArg === 'propose') throw new InvalidArgumentError('mode "propose" is not supported; use create, overwrite or append');
        const mode: WriteMode = modeArg === 'overwrite' || modeArg === 'append' ? modeArg : 'create';
        const etagArg = stringArg(args, 'etag', 200, false);
        const etag = etagArg === null || etagArg === '' ? null : etagArg;
        if (this.isTainted(ctx)) {
          const p = await s.prepareWrite(h, args['path'], content, mode, etag);
          return this.#ask(ctx, name, {
            args: { path: p.path, mode, content, wikiRoot, location: h.location.kind },
            binding: { page: p.etag ?? ABSENT, rootFileId: p.rootFileId },
            description: describeWrite(mode, p.etag !== null, p.path, wikiRoot, byteLength(content)),
          });
        }
        const done = await s.write(h, args['path'], content, mode, etag);
        return json({ success: true, action: done.action, path: done.path, wiki_root: wikiRoot, file_id: done.fileId, size: done.size, etag: done.etag });
      }
      case 'wiki_log_event': {
        const title = stringArg(args, 'title', 2000, true) ?? '';
        if (title.trim() === '') throw new InvalidArgumentError('title must not be empty');
        const details = stringArg(args, 'details', 20_000, false) ?? '';
        if (this.isTainted(ctx)) {
          // Bound to the root only: a log entry is appended to whatever log.md holds by then.
          const rootFileId = await s.rootFileId(h);
          // One line in the server's request: the model's title must not add lines of its own.
          const flat = title.replace(/[\u0000-\u001f\u007f\u2028\u2029]+/g, ' ');
          const shown = flat.length > 120 ? `${flat.slice(0, 117)}...` : flat;
          return this.#ask(ctx, name, {
            args: { title, details, wikiRoot, location: h.location.kind },
            binding: { rootFileId },
            description: `add the entry "${shown}" (${formatSize(byteLength(title) + byteLength(details))}) to log.md of the wiki "${wikiRoot}"`,
          });
        }
        const done = await s.logEvent(h, title, details);
        return json({ success: true, action: 'logged', wiki_root: wikiRoot, path: done.path, entry: done.entry });
      }
      default:
        return errorResult(`ERROR: Unknown tool ${name}.`);
    }
  }
}

/** Model-facing answers for refusals and Nextcloud errors; anything else is a bug and thrown. */
function refusal(name: string, err: unknown): ToolResult {
  if (err instanceof WikiRefusal || err instanceof InvalidArgumentError || err instanceof PageTooLargeError) {
    return json({ success: false, action: actionOf(name), error: err.message }, true);
  }
  if (err instanceof NextcloudError) {
    const text =
      err.status === 403 ? 'Nextcloud refused this for your account' : err.status === 404 ? 'not found' : `Nextcloud could not do this (HTTP ${err.status})`;
    return json({ success: false, action: actionOf(name), error: text }, true);
  }
  throw err;
}

function formatSize(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${(bytes / 1024).toFixed(1)} KiB`;
}

/** Which page, what happens to it and how much text: never the content itself. */
function describeWrite(mode: WriteMode, exists: boolean, path: string, root: string, bytes: number): string {
  const size = formatSize(bytes);
  if (!exists) return `create the wiki page "${path}" in "${root}" with ${size} of text`;
  if (mode === 'append') return `append ${size} of text to the wiki page "${path}" in "${root}"`;
  return `replace the whole wiki page "${path}" in "${root}" with ${size} of text`;
}

function actionOf(name: string): string {
  return name === 'wiki_search' ? 'search' : name === 'wiki_read_page' ? 'read' : name === 'wiki_log_event' ? 'log' : 'write';
}
