import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { CurrentSchemaPostgresDialect } from './scoped-introspector.ts';
import { withStatementCache } from './statement-cache.ts';
import pg from 'pg';
import type { Database, InboxTable } from './schema.ts';

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  db: Kysely<Database>;
  /**
   * The Talk intake's own write path (the `inbox` table). On SQLite a separate
   * file written only by the HTTP thread, so an acknowledgement never waits for
   * the processing thread's write lock; on PostgreSQL the same pool as `db`
   * (absent: `db`).
   */
  intake?: Kysely<Database>;
  /** SQLite only: the intake's two hot statements, prepared once (no query building per webhook). */
  intakeStatements?: IntakeStatements;
  dialect: Dialect;
  /** SQLite files (main and intake) whose WAL the processing side checkpoints in its own thread (storage/checkpointer.ts). */
  files?: string[];
  close(): Promise<void>;
}

/** An inbox row as the intake writes it (the id comes from the database). */
export type IntakeRow = Omit<InboxTable, 'id'>;

export interface IntakeStatements {
  /** The new row's id; null when the same (room, message, actor, route) is already queued. */
  insert(row: IntakeRow): number | null;
  isHandled(roomToken: string, messageId: string): boolean;
}

export interface OpenOptions {
  /** postgres:// URL; when absent the embedded SQLite file is used. */
  databaseUrl?: string | null;
  sqlitePath?: string;
  /** PostgreSQL schema to use (tests isolate themselves this way). */
  pgSchema?: string;
  pgPoolSize?: number;
}

/** The intake file next to the main one: educai.sqlite → educai-intake.sqlite. */
export function intakePathFor(sqlitePath: string): string {
  return sqlitePath === ':memory:' ? ':memory:' : sqlitePath.replace(/(\.sqlite)?$/, '-intake.sqlite');
}

/** Schema of the intake file, versioned with user_version (it has no migration table of its own). */
const INTAKE_SCHEMA = [
  `create table if not exists inbox (
     id integer primary key autoincrement,
     room_token varchar(64) not null,
     message_id varchar(32) not null,
     actor_id varchar(255) not null,
     route varchar(191) not null,
     kind varchar(32) not null,
     payload text not null,
     received_at bigint not null,
     constraint inbox_event unique (room_token, message_id, actor_id, route))`,
  'create index if not exists inbox_room on inbox (room_token, id)',
];

/**
 * Version 2: one row per delivery route, so that a bot's own Talk identity keeping a message never
 * swallows the shared Talk bot's delivery of it (SQLite cannot change a constraint: rebuild).
 */
const INTAKE_V2 = [
  'alter table inbox rename to inbox_v1',
  'drop index if exists inbox_room',
  ...INTAKE_SCHEMA,
  `insert into inbox (id, room_token, message_id, actor_id, route, kind, payload, received_at)
     select id, room_token, message_id, actor_id, route, kind, payload, received_at from inbox_v1`,
  'drop table inbox_v1',
];

function createFile(path: string): void {
  if (path === ':memory:') return;
  mkdirSync(dirname(path), { recursive: true });
  // Conversations and encrypted secrets live here: owner-only, and SQLite gives -wal/-shm the same mode.
  closeSync(openSync(path, 'a', 0o600));
}

function openIntake(path: string, mainPath: string): BetterSqlite3.Database {
  createFile(path);
  const intake = new BetterSqlite3(path);
  intake.pragma('journal_mode = WAL');
  // A commit survives a process crash (SIGKILL); only an OS crash or power loss may lose the last acks.
  intake.pragma('synchronous = NORMAL');
  // Checkpoints (the only fsyncs) run on the processing thread, never in a webhook request.
  intake.pragma('wal_autocheckpoint = 0');
  intake.pragma('busy_timeout = 5000');
  const version = Number(intake.pragma('user_version', { simple: true }));
  if (version < 2) {
    intake.transaction(() => {
      for (const ddl of version === 1 ? INTAKE_V2 : INTAKE_SCHEMA) intake.exec(ddl);
      intake.pragma('user_version = 2');
    })();
  }
  // Read-only use: the dedupe check reads handled_messages (unqualified names fall through to attached files).
  intake.prepare('attach database ? as app').run(mainPath);
  return intake;
}

/**
 * SQLite runs in WAL mode with synchronous=NORMAL: a commit survives a process
 * crash, and only an OS crash or power loss may lose the last transactions.
 * The webhook inbox lives in a second file (see DatabaseHandle.intake) that the
 * main connection attaches as `intake`, so the worker reads it with a join and
 * never writes it; the HTTP thread is its only writer.
 */
function openSqlite(path: string): DatabaseHandle {
  createFile(path);
  const sqlite = new BetterSqlite3(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  // Checkpoints run in the checkpointer's thread; this is only the safety net if it is not running (~80 MB of WAL).
  sqlite.pragma('wal_autocheckpoint = 20000');
  const intakePath = intakePathFor(path);
  let intakeDb: Kysely<Database>;
  let closeIntake: () => Promise<void>;
  let statements: IntakeStatements | undefined;
  if (path === ':memory:') {
    // One connection sees one in-memory database: the intake is an attached in-memory schema on it.
    sqlite.exec("attach database ':memory:' as intake");
    for (const ddl of INTAKE_SCHEMA)
      sqlite.exec(
        ddl.replace('create table if not exists inbox', 'create table if not exists intake.inbox').replace('inbox_room on inbox', 'intake.inbox_room on inbox'),
      );
    intakeDb = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
    closeIntake = async () => undefined;
  } else {
    const intake = openIntake(intakePath, path);
    sqlite.prepare('attach database ? as intake').run(intakePath);
    const k = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(intake) }) });
    intakeDb = k;
    // Prepared on first use: handled_messages exists only once the main file is migrated.
    let insert: BetterSqlite3.Statement | null = null;
    let handled: BetterSqlite3.Statement | null = null;
    statements = {
      insert: (row) => {
        insert ??= intake.prepare(
          'insert into inbox (room_token, message_id, actor_id, route, kind, payload, received_at) values (@room_token, @message_id, @actor_id, @route, @kind, @payload, @received_at) on conflict (room_token, message_id, actor_id, route) do nothing',
        );
        const result = insert.run(row);
        return result.changes > 0 ? Number(result.lastInsertRowid) : null;
      },
      isHandled: (roomToken, messageId) => {
        handled ??= intake.prepare('select 1 from handled_messages where room_token = ? and message_id = ?').pluck();
        return handled.get(roomToken, messageId) !== undefined;
      },
    };
    closeIntake = () => k.destroy();
  }
  const db = path === ':memory:' ? intakeDb : new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return {
    db,
    intake: intakeDb,
    ...(statements ? { intakeStatements: statements } : {}),
    dialect: 'sqlite',
    ...(path === ':memory:' ? {} : { files: [path, intakePath] }),
    close: async () => {
      if (intakeDb !== db) await closeIntake();
      await db.destroy();
    },
  };
}

function openPostgres(url: string, schema: string | undefined, poolSize: number): DatabaseHandle {
  // int8 (timestamps in ms, ids) as numbers: all our values stay below 2^53.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format as 'text')),
  };
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types,
    // With a schema per tenant, catalog queries scan every schema; parallel workers there race with schemas being dropped.
    ...(schema ? { options: `-c search_path=${schema} -c max_parallel_workers_per_gather=0` } : {}),
  });
  const db = new Kysely<Database>({ dialect: new CurrentSchemaPostgresDialect({ pool }) });
  return { db, intake: db, dialect: 'postgres', close: () => db.destroy() };
}

export function openDatabase(options: OpenOptions): DatabaseHandle {
  if (options.databaseUrl) return openPostgres(options.databaseUrl, options.pgSchema, options.pgPoolSize ?? 10);
  if (!options.sqlitePath) throw new Error('sqlitePath is required without a DATABASE_URL');
  return openSqlite(options.sqlitePath);
}
