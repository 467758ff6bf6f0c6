import pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

/** What one process tells the others: new inbox rows, or configuration to reload (bots, settings, tool servers, routing). */
export type ChangeTopic = 'inbox' | 'settings' | 'index';
const TOPICS: ReadonlySet<string> = new Set<ChangeTopic>(['inbox', 'settings', 'index']);

export interface NotifierOptions {
  /** The same postgres:// URL the pool uses (its search_path names the schema, and so the channel). */
  url: string;
  /** A schema given apart from the URL (tests). */
  schema?: string;
  /** This process, so that it skips its own messages. */
  origin: string;
  onChange: (topic: ChangeTopic) => void;
  /** After a (re)connection: messages sent while it was down are lost, so everything is reloaded. */
  onReconnect: () => void;
  onError: (err: unknown) => void;
  /** Pause before a reconnection attempt (default 500 ms). */
  retryMs?: number;
}

/**
 * PostgreSQL LISTEN/NOTIFY between the web and worker processes (scale-out), in place of the
 * in-process thread RPC. One connection of its own listens on a channel per schema (channels are
 * database-wide); sending goes through the pool, so a change is announced by whoever made it.
 */
export class Notifier {
  readonly #options: NotifierOptions;
  #client: pg.Client | null = null;
  #channel: string | null = null;
  #closed = false;
  #timer: NodeJS.Timeout | null = null;

  private constructor(options: NotifierOptions) {
    this.#options = options;
  }

  /** Resolves once listening (the first connection does not count as a reconnect). */
  static async start(options: NotifierOptions): Promise<Notifier> {
    const n = new Notifier(options);
    await n.#connect(false);
    return n;
  }

  /** The channel for the schema `db` works in: `educai_<schema>`. */
  static async channelFor(db: Kysely<Database>): Promise<string> {
    const r = await sql<{ s: string }>`select current_schema() as s`.execute(db);
    return channelName(r.rows[0]?.s ?? 'public');
  }

  async #connect(reconnect: boolean): Promise<void> {
    const o = this.#options;
    const client = new pg.Client({ connectionString: o.url, ...(o.schema ? { options: `-c search_path=${o.schema}` } : {}) });
    client.on('error', (err) => {
      o.onError(err);
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      const schema = (await client.query<{ s: string }>('select current_schema() as s')).rows[0]?.s ?? 'public';
      const channel = channelName(schema);
      await client.query(`listen "${channel}"`);
      client.on('notification', (m) => {
        if (m.channel !== channel || !m.payload) return;
        const [origin, topic] = m.payload.split(' ', 2);
        if (origin !== o.origin && topic !== undefined && TOPICS.has(topic)) o.onChange(topic as ChangeTopic);
      });
      this.#client = client;
      this.#channel = channel;
      if (reconnect) o.onReconnect();
    } catch (err) {
      await client.end().catch(() => undefined);
      if (!reconnect) throw err;
      o.onError(err);
      this.#retry();
    }
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = null;
    void client.end().catch(() => undefined);
    this.#retry();
  }

  #retry(): void {
    if (this.#closed || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (!this.#closed) void this.#connect(true);
    }, this.#options.retryMs ?? 500);
    this.#timer.unref();
  }

  /** Tells every other process (through `db`, the sender's pool). */
  async announce(db: Kysely<Database>, topic: ChangeTopic): Promise<void> {
    const channel = this.#channel ?? (await Notifier.channelFor(db));
    await sql`select pg_notify(${channel}, ${`${this.#options.origin} ${topic}`})`.execute(db);
  }

  /** Tests: drops the listening connection as a network failure would. */
  dropConnection(): void {
    const c = this.#client;
    if (c) this.#lost(c);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const c = this.#client;
    this.#client = null;
    await c?.end().catch(() => undefined);
  }
}

function channelName(schema: string): string {
  // Identifiers are at most 63 bytes; schema names here are plain (a-z, 0-9, _).
  return `educai_${schema.replace(/[^a-zA-Z0-9_]/g, '_')}`.slice(0, 63).toLowerCase();
}
