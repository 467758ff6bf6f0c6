// Deck 1.13 as capture 90 shows it: the REST API below /index.php/apps/deck/api/v1.0 (plain
// JSON, errors as `{status, message}`) and the OCS comments API. Like the real app, card
// routes ignore the board and stack ids of the URL (a card is found by its id alone, an
// unknown or foreign card is 403 "Permission denied") and an update moves the card to the
// stack named in its URL. Every call's acting uid is recorded in `actors`.
// Also like Deck 1.13's code (lib/Service/CardService.php, AssignmentService.php,
// CommentService.php, StackService.php): an update without `done` clears it, and one without
// title, type or owner is a 400; writes on an archived board are a 500 (StatusException);
// assignments carry a type (0 user, 1 group) that unassigning must match; a card moved to
// another board keeps its old board's labels; reorder ignores `order` (the card id reaches
// CardService::reorder as a string; capture 90 asked for order 0 and got 1) unless `version`
// is set to 1.16 or later; the archived listing carries no assignees, comment count or owner
// object; editing a reply checks its parent comment's id as a card id.
// Boards, stacks and labels are written as Deck 1.17 does it (capture
// test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json): the manage right for all of them,
// a 400 with an empty body when a required field (board color, stack order, label color) is
// missing, a board update without `archived` unarchives, a stack update moves the stack to the
// board of its URL, stacks are never renumbered, label titles are unique per board (exactly), and
// a deleted label comes off every card.
import { createHash } from 'node:crypto';
import { ocsData, ocsFailure, phpJson, type FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { UserDirectory } from './users.ts';

export interface FakeDeckLabel {
  id: number;
  title: string;
  color: string;
  boardId: number;
  /** Set by an update (capture renameLabel); 0 until then. */
  lastModified?: number;
}

/** type 0 = user, 1 = group. */
export interface FakeDeckAcl {
  id: number;
  type: number;
  participant: string;
  edit: boolean;
  share: boolean;
  manage: boolean;
}

export interface FakeDeckBoard {
  id: number;
  title: string;
  owner: string;
  color: string;
  archived: boolean;
  deletedAt: number;
  lastModified: number;
  labels: FakeDeckLabel[];
  acl: FakeDeckAcl[];
}

export interface FakeDeckStack {
  id: number;
  title: string;
  boardId: number;
  order: number;
  deletedAt: number;
  lastModified: number;
}

export interface FakeDeckCard {
  id: number;
  title: string;
  description: string;
  stackId: number;
  order: number;
  owner: string;
  archived: boolean;
  duedate: string | null;
  deletedAt: number;
  createdAt: number;
  lastModified: number;
  lastEditor: string | null;
  type: string;
  done: string | null;
  labels: number[];
  /** type 0 = user, 1 = group (Deck's Assignment::TYPE_USER / TYPE_GROUP). */
  assigned: Array<{ id: number; participant: string; type: number }>;
}

export interface FakeDeckComment {
  id: number;
  cardId: number;
  message: string;
  actorId: string;
  created: number;
  parentId: number | null;
}

interface Perms {
  read: boolean;
  edit: boolean;
  share: boolean;
  manage: boolean;
}

const BASE = '/index.php/apps/deck/api/v1.0';
const JSON_TYPE = 'application/json; charset=utf-8';
const NONE: Perms = { read: false, edit: false, share: false, manage: false };
const DEFAULT_LABELS: Array<[string, string]> = [
  ['Finished', '31CC7C'],
  ['To review', '317CCC'],
  ['Action needed', 'FF7A66'],
  ['Later', 'F1DB50'],
];

class DeckError extends Error {
  readonly status: number;
  /** Deck 1.17 answers a missing required controller argument with a bare 400 (no body). */
  readonly bare: boolean;
  constructor(status: number, message: string, bare = false) {
    super(message);
    this.status = status;
    this.bare = bare;
  }
}

const denied = (): DeckError => new DeckError(403, 'Permission denied');
const bareBadRequest = (): DeckError => new DeckError(400, '', true);
const NOT_EMPTY = (field: string): DeckError => new DeckError(400, `${field} must be provided and must be not empty`);
// Deck's StatusException answers 500.
const archivedCard = (): DeckError => new DeckError(500, 'Operation not allowed. This card is archived.');

function md5(s: string): string {
  return createHash('md5').update(s).digest('hex');
}

function json(status: number, value: unknown): FakeReply {
  return { status, headers: { 'content-type': JSON_TYPE }, body: phpJson(value) };
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

/** A date as Deck stores and returns it, or null for null, '' and anything unparsable. */
function isoOrNull(v: unknown): string | null {
  if (typeof v !== 'string' || v === '') return null;
  const ms = Date.parse(v);
  return Number.isNaN(ms) ? null : iso(Math.floor(ms / 1000));
}

export class FakeDeck {
  readonly boards = new Map<number, FakeDeckBoard>();
  readonly stacks = new Map<number, FakeDeckStack>();
  readonly cards = new Map<number, FakeDeckCard>();
  readonly comments = new Map<number, FakeDeckComment>();
  /** The acting uid ('' = none, null = anonymous) of every Deck call, REST and OCS. */
  readonly actors: Array<{ uid: string | null; method: string; path: string }> = [];
  /** The Deck version whose behaviour the fake follows where versions differ (reorder). */
  version = '1.13.0-beta.1';
  readonly #users: UserDirectory;
  readonly #now: () => number;
  #ids = { board: 7, stack: 16, card: 11, label: 33, acl: 5, assignment: 5, comment: 159 };

  constructor(users: UserDirectory, now: () => number) {
    this.#users = users;
    this.#now = now;
  }

  #seconds(): number {
    return Math.floor(this.#now() / 1000);
  }

  // --- seeding (like the capture: a new board gets Deck's four default labels) ---

  createBoard(owner: string, title: string, color = '0082c9'): FakeDeckBoard {
    const id = ++this.#ids.board;
    const board: FakeDeckBoard = { id, title, owner, color, archived: false, deletedAt: 0, lastModified: this.#seconds(), labels: [], acl: [] };
    for (const [t, c] of DEFAULT_LABELS) board.labels.push({ id: ++this.#ids.label, title: t, color: c, boardId: id });
    this.boards.set(id, board);
    return board;
  }

  addLabel(boardId: number, title: string, color = '31CC7C'): FakeDeckLabel {
    const board = this.#board(boardId);
    const label = { id: ++this.#ids.label, title, color, boardId };
    board.labels.push(label);
    return label;
  }

  addStack(boardId: number, title: string, order: number): FakeDeckStack {
    this.#board(boardId);
    const stack = { id: ++this.#ids.stack, title, boardId, order, deletedAt: 0, lastModified: this.#seconds() };
    this.stacks.set(stack.id, stack);
    return stack;
  }

  addCard(
    stackId: number,
    owner: string,
    input: Partial<Pick<FakeDeckCard, 'title' | 'description' | 'duedate' | 'order' | 'archived' | 'labels' | 'type' | 'done'>> & {
      assigned?: string[];
      assignedGroups?: string[];
    } = {},
  ): FakeDeckCard {
    const s = this.#seconds();
    const card: FakeDeckCard = {
      id: ++this.#ids.card,
      title: input.title ?? 'Card',
      description: input.description ?? '',
      stackId,
      order: input.order ?? 999,
      owner,
      archived: input.archived ?? false,
      duedate: input.duedate ?? null,
      deletedAt: 0,
      createdAt: s,
      lastModified: s,
      lastEditor: null,
      type: input.type ?? 'plain',
      done: input.done ?? null,
      labels: [...(input.labels ?? [])],
      assigned: [
        ...(input.assigned ?? []).map((participant) => ({ id: ++this.#ids.assignment, participant, type: 0 })),
        ...(input.assignedGroups ?? []).map((participant) => ({ id: ++this.#ids.assignment, participant, type: 1 })),
      ],
    };
    this.cards.set(card.id, card);
    return card;
  }

  share(boardId: number, participant: string, rights: Partial<Omit<Perms, 'read'>> = {}, type = 0): FakeDeckAcl {
    const acl = { id: ++this.#ids.acl, type, participant, edit: rights.edit ?? true, share: rights.share ?? false, manage: rights.manage ?? false };
    this.#board(boardId).acl.push(acl);
    return acl;
  }

  addComment(cardId: number, actorId: string, message: string): FakeDeckComment {
    const c = { id: ++this.#ids.comment, cardId, message, actorId, created: this.#seconds(), parentId: null };
    this.comments.set(c.id, c);
    return c;
  }

  openCards(stackId: number): FakeDeckCard[] {
    return [...this.cards.values()].filter((c) => c.stackId === stackId && c.deletedAt === 0 && !c.archived).sort((a, b) => a.order - b.order || a.id - b.id);
  }

  // --- permissions ---

  #board(id: number): FakeDeckBoard {
    const b = this.boards.get(id);
    if (!b) throw new Error(`no fake board ${id}`);
    return b;
  }

  perms(uid: string, board: FakeDeckBoard | undefined): Perms {
    if (!board || uid === '') return NONE;
    if (board.owner === uid) return { read: true, edit: true, share: true, manage: true };
    const groups = this.#users.get(uid)?.groups ?? [];
    let out = NONE;
    for (const a of board.acl) {
      if ((a.type === 0 && a.participant === uid) || (a.type === 1 && groups.includes(a.participant))) {
        out = { read: true, edit: out.edit || a.edit, share: out.share || a.share, manage: out.manage || a.manage };
      }
    }
    return out;
  }

  /** Deck's PermissionService: the board of a stack or card, else "Permission denied". */
  #boardOf(kind: 'board' | 'stack' | 'card', id: number): FakeDeckBoard {
    let boardId: number | undefined;
    if (kind === 'board') boardId = id;
    else if (kind === 'stack') boardId = this.stacks.get(id)?.boardId;
    else boardId = this.stacks.get(this.cards.get(id)?.stackId ?? -1)?.boardId;
    const board = boardId === undefined ? undefined : this.boards.get(boardId);
    if (!board) throw denied();
    return board;
  }

  #check(uid: string, kind: 'board' | 'stack' | 'card', id: number, need: keyof Perms): FakeDeckBoard {
    const board = this.#boardOf(kind, id);
    if (!this.perms(uid, board)[need]) throw denied();
    return board;
  }

  /** Deck's BoardService::isArchived check before a write: a StatusException, so HTTP 500. */
  #writable(board: FakeDeckBoard): FakeDeckBoard {
    if (board.archived) throw new DeckError(500, 'Operation not allowed. This board is archived.');
    return board;
  }

  /** Deck >= 1.16 casts the card id before CardService::reorder compares it (Deck PR #7276). */
  #reorderHonoursOrder(): boolean {
    const [major = 0, minor = 0] = this.version.split('.').map(Number);
    return major > 1 || (major === 1 && minor >= 16);
  }

  #members(board: FakeDeckBoard): string[] {
    const out = new Set<string>([board.owner]);
    for (const a of board.acl) {
      if (a.type === 0) out.add(a.participant);
      if (a.type === 1) for (const m of this.#users.members(a.participant)) out.add(m);
    }
    return [...out];
  }

  // --- JSON shapes of capture 90 ---

  #user(uid: string): Record<string, unknown> {
    return { primaryKey: uid, uid, displayname: this.#users.displayName(uid), type: 0 };
  }

  #labelJson(l: FakeDeckLabel, cardId: number | null): Record<string, unknown> {
    const lastModified = l.lastModified ?? 0;
    return { id: l.id, title: l.title, color: l.color, boardId: l.boardId, cardId, lastModified, ETag: md5(String(lastModified)) };
  }

  #aclJson(a: FakeDeckAcl, boardId: number): Record<string, unknown> {
    const participant = a.type === 0 ? this.#user(a.participant) : { primaryKey: a.participant, uid: a.participant, displayname: a.participant, type: a.type };
    return { id: a.id, participant, type: a.type, boardId, permissionEdit: a.edit, permissionShare: a.share, permissionManage: a.manage, owner: false };
  }

  /** BoardService::create's answer (capture createBoard): the full keys, but no users, stacks or settings yet. */
  #createdBoardJson(b: FakeDeckBoard, uid: string): Record<string, unknown> {
    const { shared: _shared, ...shape } = this.#boardJson(b, uid, false);
    return { ...shape, labels: b.labels.map((l) => ({ ...this.#labelJson(l, null), lastModified: null, ETag: md5('') })) };
  }

  #boardJson(b: FakeDeckBoard, uid: string, full: boolean): Record<string, unknown> {
    const p = this.perms(uid, b);
    const stacks = full
      ? [...this.stacks.values()]
          .filter((s) => s.boardId === b.id && s.deletedAt === 0)
          .sort((x, y) => x.id - y.id)
          .map((s) => this.#stackJson(s, null))
      : [];
    return {
      id: b.id,
      title: b.title,
      owner: this.#user(b.owner),
      color: b.color,
      archived: b.archived,
      labels: b.labels.map((l) => this.#labelJson(l, null)),
      acl: b.acl.map((a) => this.#aclJson(a, b.id)),
      permissions: { PERMISSION_READ: p.read, PERMISSION_EDIT: p.edit, PERMISSION_MANAGE: p.manage, PERMISSION_SHARE: p.share },
      users: full ? this.#members(b).map((u) => this.#user(u)) : [],
      ...(full ? {} : { shared: b.owner === uid ? 0 : 1 }),
      stacks,
      activeSessions: [],
      deletedAt: b.deletedAt,
      lastModified: b.lastModified,
      settings: full ? { 'notify-due': 'assigned', calendar: true } : [],
      ETag: md5(String(b.lastModified)),
    };
  }

  #stackJson(s: FakeDeckStack, cards: FakeDeckCard[] | null, archived = false): Record<string, unknown> {
    return {
      id: s.id,
      title: s.title,
      boardId: s.boardId,
      deletedAt: s.deletedAt,
      lastModified: s.lastModified,
      ...(cards && cards.length > 0 ? { cards: cards.map((c) => (archived ? this.#archivedCardJson(c) : this.#cardJson(c))) } : {}),
      order: s.order,
      ETag: md5(String(s.lastModified)),
    };
  }

  /** The card's labels, from whichever board they belong to (Deck joins them by id alone). */
  #cardLabels(c: FakeDeckCard): FakeDeckLabel[] {
    return [...this.boards.values()].flatMap((b) => b.labels).filter((l) => c.labels.includes(l.id));
  }

  #participantJson(participant: string, type: number): Record<string, unknown> {
    return type === 0 ? this.#user(participant) : { primaryKey: participant, uid: participant, displayname: participant, type };
  }

  #cardJson(c: FakeDeckCard): Record<string, unknown> {
    const labels = this.#cardLabels(c);
    return {
      id: c.id,
      title: c.title,
      description: c.description,
      stackId: c.stackId,
      type: c.type,
      lastModified: c.lastModified,
      lastEditor: c.lastEditor,
      createdAt: c.createdAt,
      labels: labels.map((l) => this.#labelJson(l, c.id)),
      assignedUsers: c.assigned.map((a) => ({ id: a.id, participant: this.#participantJson(a.participant, a.type), cardId: c.id, type: a.type })),
      attachments: [],
      attachmentCount: 0,
      owner: this.#user(c.owner),
      order: c.order,
      archived: c.archived,
      done: c.done,
      duedate: c.duedate,
      deletedAt: c.deletedAt,
      commentsUnread: 0,
      commentsCount: [...this.comments.values()].filter((m) => m.cardId === c.id).length,
      ETag: md5(String(c.lastModified)),
      overdue: 0,
    };
  }

  /** The card entity without CardService's enrichment (capture 90 createCard and moveCardToDone). */
  #rawCardJson(c: FakeDeckCard): Record<string, unknown> {
    const { overdue: _overdue, ...shape } = this.#cardJson(c);
    return {
      ...shape,
      descriptionPrev: null,
      labels: null,
      assignedUsers: null,
      attachments: null,
      attachmentCount: null,
      owner: c.owner,
      notified: false,
      commentsCount: 0,
      relatedStack: null,
      relatedBoard: null,
    };
  }

  /** StackService::findAllArchived: the entity with its labels and attachment count only. */
  #archivedCardJson(c: FakeDeckCard): Record<string, unknown> {
    const labels = this.#cardLabels(c);
    return { ...this.#rawCardJson(c), labels: labels.length > 0 ? labels.map((l) => this.#labelJson(l, c.id)) : null, attachmentCount: 0 };
  }

  #commentJson(c: FakeDeckComment): Record<string, unknown> {
    const mentions = [...c.message.matchAll(/(?:^|\s)@([A-Za-z0-9_.-]+)/g)].map((m) => m[1] ?? '').filter((u) => this.#users.has(u));
    const parent = c.parentId === null ? undefined : this.comments.get(c.parentId);
    return {
      id: c.id,
      objectId: c.cardId,
      message: c.message,
      actorId: c.actorId,
      actorType: 'users',
      actorDisplayName: this.#users.displayName(c.actorId),
      creationDateTime: iso(c.created),
      mentions: [...new Set(mentions)].map((u) => ({ mentionId: u, mentionType: 'user', mentionDisplayName: this.#users.displayName(u) })),
      ...(parent
        ? {
            replyTo: {
              id: parent.id,
              objectId: parent.cardId,
              message: parent.message,
              actorId: parent.actorId,
              actorType: 'users',
              actorDisplayName: this.#users.displayName(parent.actorId),
              creationDateTime: iso(parent.created),
              mentions: [],
            },
          }
        : {}),
    };
  }

  // --- REST ---

  handles(path: string): boolean {
    return path === BASE || path.startsWith(`${BASE}/`);
  }

  handleRest(method: string, path: string, headers: Record<string, string>, rawBody: string, user: string | null, violation: (p: string) => void): FakeReply {
    this.actors.push({ uid: user, method, path });
    if (headers['ocs-apirequest'] !== 'true') violation('Deck REST call without OCS-APIRequest: true');
    if (user === null || user === '') return json(401, { message: 'Current user is not logged in' });
    let body: Record<string, unknown> = {};
    if (rawBody !== '') {
      if (!(headers['content-type'] ?? '').includes('application/json')) violation('Deck REST body is not JSON');
      try {
        const parsed: unknown = JSON.parse(rawBody);
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
      } catch {
        body = {};
      }
    }
    const rest = path.slice(BASE.length);
    try {
      const out = this.#route(method, rest, body, user);
      if (out === undefined) {
        violation(`unknown Deck route ${method} ${path}`);
        return json(404, { status: 404, message: 'Not found' });
      }
      return json(200, out);
    } catch (err) {
      if (err instanceof DeckError)
        return err.bare
          ? { status: err.status, headers: { 'content-type': 'text/html; charset=UTF-8' }, body: '' }
          : json(err.status, { status: err.status, message: err.message });
      throw err;
    }
  }

  #route(method: string, rest: string, body: Record<string, unknown>, uid: string): unknown {
    let m: RegExpExecArray | null;
    const n = (i: number): number => Number(m?.[i]);
    if (method === 'GET' && rest === '/boards') {
      return [...this.boards.values()].filter((b) => this.perms(uid, b).read).map((b) => this.#boardJson(b, uid, false));
    }
    if (method === 'POST' && rest === '/boards') {
      if (typeof body['title'] !== 'string' || body['title'] === '') throw NOT_EMPTY('title');
      if (typeof body['color'] !== 'string') throw bareBadRequest();
      const board = this.createBoard(uid, body['title'], body['color']);
      board.lastModified = 0;
      return this.#createdBoardJson(board, uid);
    }
    if ((m = /^\/boards\/(\d+)$/.exec(rest)) && method === 'GET') {
      const board = this.#check(uid, 'board', n(1), 'read');
      return this.#boardJson(board, uid, true);
    }
    if ((m = /^\/boards\/(\d+)$/.exec(rest)) && method === 'DELETE') {
      // BoardService::delete marks the board deleted (the trash), the answer is the board.
      const board = this.#check(uid, 'board', n(1), 'manage');
      board.deletedAt = this.#seconds();
      return this.#boardJson(board, uid, true);
    }
    if ((m = /^\/boards\/(\d+)$/.exec(rest)) && method === 'PUT') {
      // BoardApiController::update(title, color, archived = false): no archived check, so an archived board can be renamed.
      const board = this.#check(uid, 'board', n(1), 'manage');
      if (typeof body['color'] !== 'string' || !('title' in body)) throw bareBadRequest();
      if (typeof body['title'] !== 'string' || body['title'] === '') throw NOT_EMPTY('title');
      board.title = body['title'];
      board.color = body['color'];
      board.archived = body['archived'] === true;
      board.lastModified = Math.max(this.#seconds(), board.lastModified + 1);
      return this.#boardJson(board, uid, true);
    }
    if ((m = /^\/boards\/(\d+)\/stacks(\/archived)?$/.exec(rest))) {
      const archived = m[2] !== undefined;
      if (method === 'GET') {
        const board = this.#check(uid, 'board', n(1), 'read');
        // Listed by id, not by order (Deck 1.17 capture listStacksAfterReorder: orders 0, 1, 0); clients sort.
        return [...this.stacks.values()]
          .filter((s) => s.boardId === board.id && s.deletedAt === 0)
          .sort((a, b) => a.id - b.id)
          .map((s) =>
            this.#stackJson(
              s,
              [...this.cards.values()]
                .filter((c) => c.stackId === s.id && c.deletedAt === 0 && c.archived === archived)
                .sort((a, b) => a.order - b.order || a.id - b.id),
              archived,
            ),
          );
      }
      if (method === 'POST' && !archived) {
        if (!('order' in body) || !('title' in body)) throw bareBadRequest();
        this.#writable(this.#check(uid, 'board', n(1), 'manage'));
        if (typeof body['title'] !== 'string' || body['title'] === '') throw NOT_EMPTY('title');
        const stack = this.addStack(n(1), body['title'], Number(body['order']));
        stack.lastModified = 0;
        return this.#stackJson(stack, null);
      }
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)$/.exec(rest)) && method === 'PUT') {
      if (!('order' in body) || !('title' in body)) throw bareBadRequest();
      this.#writable(this.#check(uid, 'stack', n(2), 'manage'));
      this.#writable(this.#check(uid, 'board', n(1), 'manage'));
      if (typeof body['title'] !== 'string' || body['title'] === '') throw NOT_EMPTY('title');
      const stack = this.stacks.get(n(2));
      if (!stack || stack.deletedAt !== 0) throw denied();
      stack.title = body['title'];
      stack.order = Number(body['order']);
      // StackService::update sets the board of the URL (capture updateStackOtherBoardUrl).
      stack.boardId = n(1);
      return this.#stackJson(stack, null);
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)$/.exec(rest)) && method === 'DELETE') {
      this.#check(uid, 'stack', n(2), 'manage');
      const stack = this.stacks.get(n(2));
      if (!stack || stack.deletedAt !== 0) throw denied();
      stack.deletedAt = this.#seconds();
      for (const c of this.cards.values()) if (c.stackId === stack.id) c.deletedAt = this.#seconds();
      return this.#stackJson(stack, null);
    }
    if ((m = /^\/boards\/(\d+)\/labels$/.exec(rest)) && method === 'POST') {
      if (typeof body['color'] !== 'string' || !('title' in body)) throw bareBadRequest();
      const board = this.#writable(this.#check(uid, 'board', n(1), 'manage'));
      const title = String(body['title']);
      if (board.labels.some((l) => l.title === title)) throw new DeckError(400, 'title must be unique');
      const label = this.addLabel(n(1), title, body['color']);
      return { ...this.#labelJson(label, null), lastModified: null, ETag: md5('') };
    }
    if ((m = /^\/boards\/(\d+)\/labels\/(\d+)$/.exec(rest))) {
      // LabelService finds the label by id and checks the right on its own board.
      const labelId = n(2);
      const board = [...this.boards.values()].find((b) => b.labels.some((l) => l.id === labelId));
      if (!board) throw denied();
      const label = board.labels.find((l) => l.id === labelId) as FakeDeckLabel;
      if (method === 'GET') {
        this.#check(uid, 'board', board.id, 'read');
        return this.#labelJson(label, null);
      }
      if (method === 'PUT') {
        if (typeof body['color'] !== 'string' || !('title' in body)) throw bareBadRequest();
        this.#writable(this.#check(uid, 'board', board.id, 'manage'));
        const title = String(body['title']);
        if (board.labels.some((l) => l !== label && l.title === title)) throw new DeckError(400, 'title must be unique');
        label.title = title;
        label.color = body['color'];
        label.lastModified = Math.max(this.#seconds(), (label.lastModified ?? 0) + 1);
        return this.#labelJson(label, null);
      }
      if (method === 'DELETE') {
        this.#writable(this.#check(uid, 'board', board.id, 'manage'));
        board.labels = board.labels.filter((l) => l !== label);
        for (const c of this.cards.values()) c.labels = c.labels.filter((id) => id !== labelId);
        return this.#labelJson(label, null);
      }
    }
    if ((m = /^\/boards\/(\d+)\/acl$/.exec(rest)) && method === 'POST') {
      const board = this.#check(uid, 'board', n(1), 'share');
      const acl = this.share(
        board.id,
        String(body['participant']),
        { edit: body['permissionEdit'] === true, share: body['permissionShare'] === true, manage: body['permissionManage'] === true },
        Number(body['type'] ?? 0),
      );
      return this.#aclJson(acl, board.id);
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)\/cards$/.exec(rest)) && method === 'POST') {
      this.#writable(this.#check(uid, 'stack', n(2), 'edit'));
      if (typeof body['title'] !== 'string' || body['title'] === '') throw new DeckError(400, 'title must be provided');
      const card = this.addCard(n(2), uid, {
        title: body['title'],
        description: typeof body['description'] === 'string' ? body['description'] : '',
        duedate: typeof body['duedate'] === 'string' ? iso(Math.floor(Date.parse(body['duedate']) / 1000)) : null,
        order: Number(body['order'] ?? 999),
      });
      // Capture 90 createCard: a new card has labels, assignees and attachments null and the owner as a plain uid.
      return this.#rawCardJson(card);
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)\/cards\/(\d+)$/.exec(rest))) {
      const cardId = n(3);
      if (method === 'GET') {
        this.#check(uid, 'card', cardId, 'read');
        return this.#cardJson(this.#card(cardId));
      }
      if (method === 'PUT') return this.#updateCard(uid, cardId, n(2), body);
      if (method === 'DELETE') {
        this.#writable(this.#check(uid, 'card', cardId, 'edit'));
        const card = this.#card(cardId);
        card.deletedAt = this.#seconds();
        return this.#cardJson(card);
      }
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)\/cards\/(\d+)\/(assignLabel|removeLabel|assignUser|unassignUser|reorder)$/.exec(rest)) && method === 'PUT') {
      const cardId = n(3);
      const board = this.#check(uid, 'card', cardId, 'edit');
      const card = this.#card(cardId);
      switch (m[4]) {
        case 'assignLabel':
        case 'removeLabel': {
          this.#writable(board);
          if (card.archived) throw archivedCard();
          const labelId = Number(body['labelId']);
          const label = [...this.boards.values()].flatMap((b) => b.labels).find((l) => l.id === labelId);
          if (!label || !this.perms(uid, this.boards.get(label.boardId)).read) throw denied();
          if (label.boardId !== board.id) throw new DeckError(400, 'Operation not allowed. Label does not exist.');
          if (m[4] === 'assignLabel' && !card.labels.includes(labelId)) card.labels.push(labelId);
          if (m[4] === 'removeLabel') card.labels = card.labels.filter((l) => l !== labelId);
          this.#touch(card, uid);
          return null;
        }
        case 'assignUser':
          return this.#assign(uid, board, card, String(body['userId'] ?? ''), Number(body['type'] ?? 0));
        case 'unassignUser':
          return this.#unassign(uid, card, String(body['userId'] ?? ''), Number(body['type'] ?? 0));
        default:
          return this.#reorder(uid, board, card, Number(body['stackId']), Number(body['order'] ?? 0));
      }
    }
    return undefined;
  }

  /** CardApiController::update: every field is overwritten; the stack is the one of the URL. */
  #updateCard(uid: string, cardId: number, stackId: number, body: Record<string, unknown>): unknown {
    for (const field of ['title', 'type', 'owner']) {
      if (typeof body[field] !== 'string' || body[field] === '') throw new DeckError(400, `${field} must be provided and must be not empty`);
    }
    const board = this.#check(uid, 'card', cardId, 'edit');
    this.#check(uid, 'stack', stackId, 'edit');
    // Only the card's current board is checked (isArchived on the card), not the target board.
    this.#writable(board);
    const card = this.#card(cardId);
    if (card.archived && body['archived'] !== false) throw archivedCard();
    card.title = String(body['title']);
    card.type = String(body['type']);
    card.description = typeof body['description'] === 'string' ? body['description'] : '';
    card.duedate = isoOrNull(body['duedate']);
    card.order = Number(body['order'] ?? 0);
    if (typeof body['archived'] === 'boolean') card.archived = body['archived'];
    // Deck 1.13 (#5491): without `done` in the request the card is marked undone.
    card.done = 'done' in body ? isoOrNull(body['done']) : null;
    // Deck's CardApiController::update takes the stack id of the URL; 1.13 leaves the labels as they are.
    card.stackId = stackId;
    this.#touch(card, uid);
    return this.#cardJson(card);
  }

  /** AssignmentService::assignUser: a member of the board, or a group the board is shared with. */
  #assign(uid: string, board: FakeDeckBoard, card: FakeDeckCard, who: string, type: number): unknown {
    if (type !== 0 && type !== 1) throw new DeckError(400, 'Invalid type provided for assignemnt');
    if (card.assigned.some((a) => a.participant === who && a.type === type)) throw new DeckError(400, 'The user is already assigned to the card');
    const group = board.acl.some((a) => a.type === 1 && a.participant === who);
    if (!this.#members(board).includes(who) && !group) throw new DeckError(400, 'The user is not part of the board');
    const a = { id: ++this.#ids.assignment, participant: who, type };
    card.assigned.push(a);
    this.#touch(card, uid);
    return { id: a.id, participant: this.#participantJson(who, type), cardId: card.id, type };
  }

  /** AssignmentService::unassignUser matches participant and type (default 0). */
  #unassign(uid: string, card: FakeDeckCard, who: string, type: number): unknown {
    const a = card.assigned.find((x) => x.participant === who && x.type === type);
    if (!a) throw new DeckError(404, `No assignment for ${who}found.`);
    card.assigned = card.assigned.filter((x) => x !== a);
    this.#touch(card, uid);
    return { id: a.id, participant: this.#participantJson(who, type), cardId: card.id, type };
  }

  /**
   * CardService::reorder: the card moves to the stack, then the stack is renumbered, skipping
   * slot `order`. Before 1.16 the moved card is not recognised, so it is renumbered by its old
   * order like the others (capture 90: order 0 asked, 1 returned).
   */
  #reorder(uid: string, board: FakeDeckBoard, card: FakeDeckCard, toStack: number, order: number): unknown {
    this.#check(uid, 'stack', toStack, 'edit');
    this.#writable(board);
    if (card.archived) throw archivedCard();
    card.stackId = toStack;
    this.#touch(card, uid);
    const cards = this.openCards(toStack);
    const honoured = this.#reorderHonoursOrder();
    let i = 0;
    for (const c of cards) {
      if (honoured && c === card) {
        c.order = order;
        continue;
      }
      if (i === order) i++;
      c.order = i++;
    }
    return this.openCards(toStack).map((c) => this.#rawCardJson(c));
  }

  #card(id: number): FakeDeckCard {
    const c = this.cards.get(id);
    if (!c || c.deletedAt !== 0) throw denied();
    return c;
  }

  #touch(card: FakeDeckCard, uid: string): void {
    card.lastModified = Math.max(this.#seconds(), card.lastModified + 1);
    card.lastEditor = uid;
    // A card change touches its stack too (Deck 1.17 capture updateStackOtherBoardUrl: set after a label went on a card).
    const stack = this.stacks.get(card.stackId);
    if (stack) stack.lastModified = card.lastModified;
  }

  // --- OCS comments ---

  ocsRoutes(): FakeRoute[] {
    const base = /^\/apps\/deck\/api\/v1\.0\/cards\/(\d+)\/comments$/;
    const one = /^\/apps\/deck\/api\/v1\.0\/cards\/(\d+)\/comments\/(\d+)$/;
    const wrap =
      (fn: (ctx: RouteContext, m: RegExpExecArray) => unknown) =>
      (ctx: RouteContext, m: RegExpExecArray): FakeReply => {
        this.actors.push({ uid: ctx.user, method: '(ocs)', path: m[0] });
        try {
          return ocsData(ctx.version, ctx.format, fn(ctx, m));
        } catch (err) {
          if (err instanceof DeckError) return ocsFailure(ctx.version, ctx.format, err.status, err.message);
          throw err;
        }
      };
    const uidOf = (ctx: RouteContext): string => ctx.user ?? '';
    return [
      {
        method: 'GET',
        path: base,
        access: 'login',
        csrf: true,
        handle: wrap((ctx, m) => {
          const cardId = Number(m[1]);
          this.#check(uidOf(ctx), 'card', cardId, 'read');
          const limit = Math.min(Number(ctx.params['limit'] ?? 20) || 20, 200);
          const offset = Number(ctx.params['offset'] ?? 0) || 0;
          const all = [...this.comments.values()].filter((c) => c.cardId === cardId).sort((a, b) => b.created - a.created || b.id - a.id);
          return all.slice(offset, offset + limit).map((c) => this.#commentJson(c));
        }),
      },
      {
        method: 'POST',
        path: base,
        access: 'login',
        csrf: true,
        handle: wrap((ctx, m) => {
          const cardId = Number(m[1]);
          this.#check(uidOf(ctx), 'card', cardId, 'read');
          const message = String(ctx.params['message'] ?? '');
          if (message === '' || message.length > 1000) throw new DeckError(400, 'The comment must not be empty and at most 1000 characters long');
          const parentId = ctx.params['parentId'] === null || ctx.params['parentId'] === undefined ? null : Number(ctx.params['parentId']);
          if (parentId !== null && parentId !== 0 && this.comments.get(parentId)?.cardId !== cardId) throw new DeckError(404, 'Comment not found');
          const c = this.addComment(cardId, uidOf(ctx), message);
          c.parentId = parentId || null;
          return this.#commentJson(c);
        }),
      },
      {
        method: 'PUT',
        path: one,
        access: 'login',
        csrf: true,
        handle: wrap((ctx, m) => {
          const c = this.#comment(uidOf(ctx), Number(m[1]), Number(m[2]));
          // Deck's CommentService checks a reply's parent comment id as if it were a card id.
          if (c.parentId !== null) this.#check(uidOf(ctx), 'card', c.parentId, 'read');
          if (c.actorId !== uidOf(ctx)) throw new DeckError(403, 'Only authors can edit their comment.');
          c.message = String(ctx.params['message'] ?? '');
          return this.#commentJson(c);
        }),
      },
      {
        method: 'DELETE',
        path: one,
        access: 'login',
        csrf: true,
        handle: wrap((ctx, m) => {
          const c = this.#comment(uidOf(ctx), Number(m[1]), Number(m[2]));
          if (c.actorId !== uidOf(ctx)) throw new DeckError(403, 'Only authors can delete their comment.');
          this.comments.delete(c.id);
          return [];
        }),
      },
    ];
  }

  #comment(uid: string, cardId: number, id: number): FakeDeckComment {
    this.#check(uid, 'card', cardId, 'read');
    const c = this.comments.get(id);
    if (!c || c.cardId !== cardId) throw new DeckError(404, 'Comment not found');
    return c;
  }
}
