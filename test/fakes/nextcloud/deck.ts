// Deck 1.13 as capture 90 shows it: the REST API below /index.php/apps/deck/api/v1.0 (plain
// JSON, errors as `{status, message}`) and the OCS comments API. Like the real app, card
// routes ignore the board and stack ids of the URL (a card is found by its id alone, an
// unknown or foreign card is 403 "Permission denied") and an update moves the card to the
// stack named in its URL. Every call's acting uid is recorded in `actors`.
import { createHash } from 'node:crypto';
import { ocsData, ocsFailure, phpJson, type FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { UserDirectory } from './users.ts';

export interface FakeDeckLabel {
  id: number;
  title: string;
  color: string;
  boardId: number;
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
  labels: number[];
  assigned: Array<{ id: number; uid: string }>;
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
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const denied = (): DeckError => new DeckError(403, 'Permission denied');

function md5(s: string): string {
  return createHash('md5').update(s).digest('hex');
}

function json(status: number, value: unknown): FakeReply {
  return { status, headers: { 'content-type': JSON_TYPE }, body: phpJson(value) };
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
}

export class FakeDeck {
  readonly boards = new Map<number, FakeDeckBoard>();
  readonly stacks = new Map<number, FakeDeckStack>();
  readonly cards = new Map<number, FakeDeckCard>();
  readonly comments = new Map<number, FakeDeckComment>();
  /** The acting uid ('' = none, null = anonymous) of every Deck call, REST and OCS. */
  readonly actors: Array<{ uid: string | null; method: string; path: string }> = [];
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

  addCard(stackId: number, owner: string, input: Partial<Pick<FakeDeckCard, 'title' | 'description' | 'duedate' | 'order' | 'archived' | 'labels'>> & { assigned?: string[] } = {}): FakeDeckCard {
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
      labels: [...(input.labels ?? [])],
      assigned: (input.assigned ?? []).map((uid) => ({ id: ++this.#ids.assignment, uid })),
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
    return { id: l.id, title: l.title, color: l.color, boardId: l.boardId, cardId, lastModified: 0, ETag: md5('0') };
  }

  #aclJson(a: FakeDeckAcl, boardId: number): Record<string, unknown> {
    const participant = a.type === 0 ? this.#user(a.participant) : { primaryKey: a.participant, uid: a.participant, displayname: a.participant, type: a.type };
    return { id: a.id, participant, type: a.type, boardId, permissionEdit: a.edit, permissionShare: a.share, permissionManage: a.manage, owner: false };
  }

  #boardJson(b: FakeDeckBoard, uid: string, full: boolean): Record<string, unknown> {
    const p = this.perms(uid, b);
    const stacks = full ? [...this.stacks.values()].filter((s) => s.boardId === b.id && s.deletedAt === 0).sort((x, y) => x.order - y.order).map((s) => this.#stackJson(s, null)) : [];
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

  #stackJson(s: FakeDeckStack, cards: FakeDeckCard[] | null): Record<string, unknown> {
    return {
      id: s.id,
      title: s.title,
      boardId: s.boardId,
      deletedAt: s.deletedAt,
      lastModified: s.lastModified,
      ...(cards && cards.length > 0 ? { cards: cards.map((c) => this.#cardJson(c)) } : {}),
      order: s.order,
      ETag: md5(String(s.lastModified)),
    };
  }

  #cardJson(c: FakeDeckCard): Record<string, unknown> {
    const boardId = this.stacks.get(c.stackId)?.boardId ?? 0;
    const labels = this.boards.get(boardId)?.labels.filter((l) => c.labels.includes(l.id)) ?? [];
    return {
      id: c.id,
      title: c.title,
      description: c.description,
      stackId: c.stackId,
      type: 'plain',
      lastModified: c.lastModified,
      lastEditor: c.lastEditor,
      createdAt: c.createdAt,
      labels: labels.map((l) => this.#labelJson(l, c.id)),
      assignedUsers: c.assigned.map((a) => ({ id: a.id, participant: this.#user(a.uid), cardId: c.id, type: 0 })),
      attachments: [],
      attachmentCount: 0,
      owner: this.#user(c.owner),
      order: c.order,
      archived: c.archived,
      done: null,
      duedate: c.duedate,
      deletedAt: c.deletedAt,
      commentsUnread: 0,
      commentsCount: [...this.comments.values()].filter((m) => m.cardId === c.id).length,
      ETag: md5(String(c.lastModified)),
      overdue: 0,
    };
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
      ...(parent ? { replyTo: { id: parent.id, objectId: parent.cardId, message: parent.message, actorId: parent.actorId, actorType: 'users', actorDisplayName: this.#users.displayName(parent.actorId), creationDateTime: iso(parent.created), mentions: [] } } : {}),
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
      if (err instanceof DeckError) return json(err.status, { status: err.status, message: err.message });
      throw err;
    }
  }

  #route(method: string, rest: string, body: Record<string, unknown>, uid: string): unknown {
    let m: RegExpExecArray | null;
    const n = (i: number): number => Number(m?.[i]);
    if (method === 'GET' && rest === '/boards') {
      return [...this.boards.values()].filter((b) => this.perms(uid, b).read).map((b) => this.#boardJson(b, uid, false));
    }
    if ((m = /^\/boards\/(\d+)$/.exec(rest)) && method === 'GET') {
      const board = this.#check(uid, 'board', n(1), 'read');
      return this.#boardJson(board, uid, true);
    }
    if ((m = /^\/boards\/(\d+)\/stacks(\/archived)?$/.exec(rest))) {
      const archived = m[2] !== undefined;
      if (method === 'GET') {
        const board = this.#check(uid, 'board', n(1), 'read');
        return [...this.stacks.values()]
          .filter((s) => s.boardId === board.id && s.deletedAt === 0)
          .sort((a, b) => a.order - b.order)
          .map((s) => this.#stackJson(s, [...this.cards.values()].filter((c) => c.stackId === s.id && c.deletedAt === 0 && c.archived === archived).sort((a, b) => a.order - b.order || a.id - b.id)));
      }
      if (method === 'POST' && !archived) {
        this.#check(uid, 'board', n(1), 'manage');
        if (typeof body['title'] !== 'string' || body['title'] === '') throw new DeckError(400, 'title must be provided');
        return this.#stackJson(this.addStack(n(1), body['title'], Number(body['order'] ?? 0)), null);
      }
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
      this.#check(uid, 'board', n(1), 'manage');
      const label = this.addLabel(n(1), String(body['title'] ?? ''), String(body['color'] ?? '31CC7C'));
      return { ...this.#labelJson(label, null), lastModified: null, ETag: md5('') };
    }
    if ((m = /^\/boards\/(\d+)\/acl$/.exec(rest)) && method === 'POST') {
      const board = this.#check(uid, 'board', n(1), 'share');
      const acl = this.share(board.id, String(body['participant']), { edit: body['permissionEdit'] === true, share: body['permissionShare'] === true, manage: body['permissionManage'] === true }, Number(body['type'] ?? 0));
      return this.#aclJson(acl, board.id);
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)\/cards$/.exec(rest)) && method === 'POST') {
      this.#check(uid, 'stack', n(2), 'edit');
      if (typeof body['title'] !== 'string' || body['title'] === '') throw new DeckError(400, 'title must be provided');
      const card = this.addCard(n(2), uid, {
        title: body['title'],
        description: typeof body['description'] === 'string' ? body['description'] : '',
        duedate: typeof body['duedate'] === 'string' ? iso(Math.floor(Date.parse(body['duedate']) / 1000)) : null,
        order: Number(body['order'] ?? 999),
      });
      // Capture 90 createCard: a new card has labels, assignees and attachments null and the owner as a plain uid.
      const { overdue: _overdue, ...shape } = this.#cardJson(card);
      return { ...shape, descriptionPrev: null, labels: null, assignedUsers: null, attachments: null, attachmentCount: null, owner: uid, notified: false, relatedStack: null, relatedBoard: null };
    }
    if ((m = /^\/boards\/(\d+)\/stacks\/(\d+)\/cards\/(\d+)$/.exec(rest))) {
      const cardId = n(3);
      if (method === 'GET') {
        this.#check(uid, 'card', cardId, 'read');
        return this.#cardJson(this.#card(cardId));
      }
      if (method === 'PUT') {
        this.#check(uid, 'card', cardId, 'edit');
        this.#check(uid, 'stack', n(2), 'edit');
        const card = this.#card(cardId);
        if (typeof body['title'] !== 'string' || body['title'] === '') throw new DeckError(400, 'title must be provided');
        if (typeof body['owner'] !== 'string' || body['owner'] === '') throw new DeckError(400, 'owner must be provided');
        if (card.archived && body['archived'] !== false) throw new DeckError(400, 'Operation not allowed. This card is archived.');
        card.title = body['title'];
        card.description = typeof body['description'] === 'string' ? body['description'] : '';
        card.duedate = typeof body['duedate'] === 'string' && body['duedate'] !== '' ? iso(Math.floor(Date.parse(body['duedate']) / 1000)) : null;
        card.order = Number(body['order'] ?? 0);
        if (typeof body['archived'] === 'boolean') card.archived = body['archived'];
        // Deck's CardApiController::update takes the stack id of the URL.
        card.stackId = n(2);
        this.#touch(card, uid);
        return this.#cardJson(card);
      }
      if (method === 'DELETE') {
        this.#check(uid, 'card', cardId, 'edit');
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
          const labelId = Number(body['labelId']);
          const label = [...this.boards.values()].flatMap((b) => b.labels).find((l) => l.id === labelId);
          if (!label || !this.perms(uid, this.boards.get(label.boardId)).read) throw denied();
          if (label.boardId !== board.id) throw new DeckError(400, 'Operation not allowed. Label does not exist.');
          if (m[4] === 'assignLabel' && !card.labels.includes(labelId)) card.labels.push(labelId);
          if (m[4] === 'removeLabel') card.labels = card.labels.filter((l) => l !== labelId);
          this.#touch(card, uid);
          return null;
        }
        case 'assignUser': {
          const who = String(body['userId'] ?? '');
          if (!this.#members(board).includes(who)) throw new DeckError(400, 'The user is not part of the board');
          if (card.assigned.some((a) => a.uid === who)) throw new DeckError(400, 'The user is already assigned to the card');
          const a = { id: ++this.#ids.assignment, uid: who };
          card.assigned.push(a);
          this.#touch(card, uid);
          return { id: a.id, participant: this.#user(who), cardId: card.id, type: 0 };
        }
        case 'unassignUser': {
          const who = String(body['userId'] ?? '');
          const a = card.assigned.find((x) => x.uid === who);
          if (!a) throw new DeckError(404, 'No assignment for this user found.');
          card.assigned = card.assigned.filter((x) => x !== a);
          this.#touch(card, uid);
          return { id: a.id, participant: this.#user(who), cardId: card.id, type: 0 };
        }
        default: {
          const toStack = Number(body['stackId']);
          this.#check(uid, 'stack', toStack, 'edit');
          if (card.archived) throw new DeckError(400, 'Operation not allowed. This card is archived.');
          const order = Number(body['order'] ?? 0);
          card.stackId = toStack;
          const others = this.openCards(toStack).filter((c) => c.id !== card.id);
          others.splice(Math.max(0, Math.min(order, others.length)), 0, card);
          others.forEach((c, i) => (c.order = i));
          this.#touch(card, uid);
          return others.map((c) => this.#cardJson(c));
        }
      }
    }
    return undefined;
  }

  #card(id: number): FakeDeckCard {
    const c = this.cards.get(id);
    if (!c || c.deletedAt !== 0) throw denied();
    return c;
  }

  #touch(card: FakeDeckCard, uid: string): void {
    card.lastModified = Math.max(this.#seconds(), card.lastModified + 1);
    card.lastEditor = uid;
  }

  // --- OCS comments ---

  ocsRoutes(): FakeRoute[] {
    const base = /^\/apps\/deck\/api\/v1\.0\/cards\/(\d+)\/comments$/;
    const one = /^\/apps\/deck\/api\/v1\.0\/cards\/(\d+)\/comments\/(\d+)$/;
    const wrap = (fn: (ctx: RouteContext, m: RegExpExecArray) => unknown) => (ctx: RouteContext, m: RegExpExecArray): FakeReply => {
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
