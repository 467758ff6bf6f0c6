// Deck as the invoking user (test/fixtures/nextcloud29/90-deck.json): the REST API below /index.php/apps/deck/api/v1.0
// (plain JSON, `OCS-APIRequest: true`) and the OCS comments API. Every id is a positive
// safe integer before it reaches a URL template (S2). Deck itself ignores the board and
// stack ids of card URLs and takes the stack id of an update URL as the card's new stack,
// so callers must pass the ids the server reported, never ids a model merely claimed.
// A JSON body overrides URL parameters (test/fixtures/nextcloud29/90-deck.json: a reorder URL named stack 17, its body
// 18, and 18 won), so an update body never carries a `stackId`.
import type { NextcloudSession } from './client.ts';
import { NextcloudError } from './errors.ts';
import { InvalidArgumentError } from './invalid-argument.ts';
import { deckVersion } from './deck-capability.ts';

const REST = '/index.php/apps/deck/api/v1.0';
const OCS = '/ocs/v2.php/apps/deck/api/v1.0';

/** Board permissions as Deck reports them for the current user. */
export interface DeckPermissions {
  read: boolean;
  edit: boolean;
  manage: boolean;
  share: boolean;
}

export interface DeckUser {
  uid: string;
  displayName: string;
}

export interface DeckLabel {
  id: number;
  title: string;
  color: string;
  /** 0 when Deck did not say; a card moved across boards by Deck 1.13 keeps its old board's labels. */
  boardId: number;
}

/** Assignment types: Deck's AssignmentService accepts users (0) and groups (1). */
export const ASSIGN_USER = 0;
export const ASSIGN_GROUP = 1;

/** One assignment of a card: a user id when `type` is 0, else a group (or team) id. */
export interface DeckAssignee {
  participant: string;
  displayName: string;
  type: number;
}

/** One ACL entry: type 0 user, 1 group, 7 team. */
export interface DeckAcl {
  id: number;
  type: number;
  participant: string;
  displayName: string;
  edit: boolean;
  share: boolean;
  manage: boolean;
}

export interface DeckCard {
  id: number;
  title: string;
  description: string;
  stackId: number;
  order: number;
  owner: string;
  archived: boolean;
  /** When the card was marked done (ISO 8601), or null; Deck clears it on an update without it. */
  done: string | null;
  /** Deck's card type ('plain' unless another client set one); an update must send it back. */
  type: string;
  duedate: string | null;
  labels: DeckLabel[];
  assignees: DeckAssignee[];
  commentsCount: number;
  /** False for cards Deck listed without assignees and comment count (the archived listing). */
  detailed: boolean;
  lastModified: number;
  etag: string;
}

export interface DeckStack {
  id: number;
  title: string;
  boardId: number;
  order: number;
  lastModified: number;
  cards: DeckCard[];
}

export interface DeckBoard {
  id: number;
  title: string;
  /** Six hex digits without '#'; a board update must send it back (Deck 1.17 answers 400 without it). */
  color: string;
  owner: DeckUser;
  archived: boolean;
  deleted: boolean;
  lastModified: number;
  labels: DeckLabel[];
  acl: DeckAcl[];
  /** Everyone with access, as Deck resolves it (owner, users, members of shared groups). */
  users: DeckUser[];
  permissions: DeckPermissions;
  stacks: DeckStack[];
}

export interface DeckComment {
  id: number;
  cardId: number;
  message: string;
  actorId: string;
  actorDisplayName: string;
  created: string;
  replyTo: number | null;
}

const MAX_ID = Number.MAX_SAFE_INTEGER;

/** A model-supplied Deck id: a positive safe integer (or its plain digits), nothing else (S2). */
export function parseDeckId(input: unknown, field: string): number {
  let n: number | null = null;
  if (typeof input === 'number' && Number.isSafeInteger(input)) n = input;
  else if (typeof input === 'string' && /^[1-9][0-9]{0,15}$/.test(input)) n = Number(input);
  if (n === null || !Number.isSafeInteger(n) || n <= 0 || n > MAX_ID)
    throw new InvalidArgumentError(`${field} must be a Deck id: a positive whole number from the Deck tools`);
  return n;
}

function int(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
  return Number.isSafeInteger(n) ? n : 0;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '';
}

function rec(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function toUser(v: unknown): DeckUser {
  if (typeof v === 'string') return { uid: v, displayName: v };
  const r = rec(v);
  const uid = str(r['uid']) || str(r['primaryKey']);
  return { uid, displayName: str(r['displayname']) || uid };
}

function toLabel(v: unknown): DeckLabel {
  const r = rec(v);
  return { id: int(r['id']), title: str(r['title']), color: str(r['color']), boardId: int(r['boardId']) };
}

function toAssignee(v: unknown): DeckAssignee {
  const r = rec(v);
  const p = toUser(r['participant']);
  return { participant: p.uid, displayName: p.displayName, type: int(r['type']) };
}

function isoOrNull(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

function toAcl(v: unknown): DeckAcl {
  const r = rec(v);
  const p = toUser(r['participant']);
  return {
    id: int(r['id']),
    type: int(r['type']),
    participant: p.uid,
    displayName: p.displayName,
    edit: r['permissionEdit'] === true,
    share: r['permissionShare'] === true,
    manage: r['permissionManage'] === true,
  };
}

export function toCard(v: unknown): DeckCard {
  const r = rec(v);
  return {
    id: int(r['id']),
    title: str(r['title']),
    description: str(r['description']),
    stackId: int(r['stackId']),
    order: int(r['order']),
    owner: toUser(r['owner']).uid,
    archived: r['archived'] === true,
    done: isoOrNull(r['done']),
    type: str(r['type']) || 'plain',
    duedate: isoOrNull(r['duedate']),
    labels: list(r['labels']).map(toLabel),
    assignees: list(r['assignedUsers']).map(toAssignee),
    commentsCount: int(r['commentsCount']),
    // Deck's un-enriched card (archived listing, create, reorder) has `assignedUsers: null`.
    detailed: Array.isArray(r['assignedUsers']),
    lastModified: int(r['lastModified']),
    etag: str(r['ETag']),
  };
}

function toStack(v: unknown): DeckStack {
  const r = rec(v);
  return {
    id: int(r['id']),
    title: str(r['title']),
    boardId: int(r['boardId']),
    order: int(r['order']),
    lastModified: int(r['lastModified']),
    cards: list(r['cards']).map(toCard),
  };
}

export function toBoard(v: unknown): DeckBoard {
  const r = rec(v);
  const p = rec(r['permissions']);
  return {
    id: int(r['id']),
    title: str(r['title']),
    color: str(r['color']),
    owner: toUser(r['owner']),
    archived: r['archived'] === true,
    deleted: int(r['deletedAt']) > 0,
    lastModified: int(r['lastModified']),
    labels: list(r['labels']).map(toLabel),
    acl: list(r['acl']).map(toAcl),
    users: list(r['users']).map(toUser),
    permissions: {
      read: p['PERMISSION_READ'] === true,
      edit: p['PERMISSION_EDIT'] === true,
      manage: p['PERMISSION_MANAGE'] === true,
      share: p['PERMISSION_SHARE'] === true,
    },
    stacks: list(r['stacks']).map(toStack),
  };
}

function toComment(v: unknown): DeckComment {
  const r = rec(v);
  const reply = rec(r['replyTo']);
  return {
    id: int(r['id']),
    cardId: int(r['objectId']),
    message: str(r['message']),
    actorId: str(r['actorId']),
    actorDisplayName: str(r['actorDisplayName']),
    created: str(r['creationDateTime']),
    replyTo: r['replyTo'] ? int(reply['id']) || null : null,
  };
}

/**
 * The card fields Deck's update endpoint needs; all of them are sent every time, because
 * Deck overwrites what is missing (description → '', duedate and done → null, order → 0).
 */
export interface CardFields {
  title: string;
  type: string;
  description: string;
  owner: string;
  order: number;
  duedate: string | null;
  done: string | null;
  archived?: boolean;
}

/** The card's current fields for an update, with `changes` applied. */
export function cardFields(card: DeckCard, changes: Partial<CardFields> = {}): CardFields {
  return {
    title: card.title,
    type: card.type,
    description: card.description,
    owner: card.owner,
    order: card.order,
    duedate: card.duedate,
    done: card.done,
    ...changes,
  };
}

export class DeckApi {
  readonly #session: NextcloudSession;

  constructor(session: NextcloudSession) {
    this.#session = session;
  }

  #rest<T>(method: string, path: string, params: Record<string, number>, body?: unknown): Promise<T> {
    for (const [k, v] of Object.entries(params)) parseDeckId(v, k);
    return this.#session.rest<T>(method, `${REST}${path}`, { params, ...(body !== undefined ? { body } : {}) });
  }

  async boards(): Promise<DeckBoard[]> {
    return list(await this.#rest<unknown>('GET', '/boards', {})).map(toBoard);
  }

  async board(boardId: number): Promise<DeckBoard> {
    return toBoard(await this.#rest<unknown>('GET', '/boards/{boardId}', { boardId }));
  }

  /** Stacks with their open cards. */
  async stacks(boardId: number): Promise<DeckStack[]> {
    return list(await this.#rest<unknown>('GET', '/boards/{boardId}/stacks', { boardId })).map(toStack);
  }

  /** Stacks with their archived cards. */
  async archivedStacks(boardId: number): Promise<DeckStack[]> {
    return list(await this.#rest<unknown>('GET', '/boards/{boardId}/stacks/archived', { boardId })).map(toStack);
  }

  async createCard(boardId: number, stackId: number, input: { title: string; description: string; duedate: string | null; order: number }): Promise<DeckCard> {
    const body = {
      title: input.title,
      type: 'plain',
      order: input.order,
      description: input.description,
      ...(input.duedate ? { duedate: input.duedate } : {}),
    };
    return toCard(await this.#rest<unknown>('POST', '/boards/{boardId}/stacks/{stackId}/cards', { boardId, stackId }, body));
  }

  /** `stackId` must be the card's stack as the server reported it: Deck moves the card to the stack of this URL. */
  async updateCard(boardId: number, stackId: number, cardId: number, fields: CardFields): Promise<DeckCard> {
    const body = {
      title: fields.title,
      type: fields.type || 'plain',
      owner: fields.owner,
      order: fields.order,
      description: fields.description,
      duedate: fields.duedate,
      done: fields.done,
      ...(fields.archived !== undefined ? { archived: fields.archived } : {}),
    };
    return toCard(await this.#rest<unknown>('PUT', '/boards/{boardId}/stacks/{stackId}/cards/{cardId}', { boardId, stackId, cardId }, body));
  }

  /** One card, enriched with assignees and comment count (CardService::find). */
  async card(boardId: number, stackId: number, cardId: number): Promise<DeckCard> {
    return toCard(await this.#rest<unknown>('GET', '/boards/{boardId}/stacks/{stackId}/cards/{cardId}', { boardId, stackId, cardId }));
  }

  async deleteCard(boardId: number, stackId: number, cardId: number): Promise<void> {
    await this.#rest<unknown>('DELETE', '/boards/{boardId}/stacks/{stackId}/cards/{cardId}', { boardId, stackId, cardId });
  }

  async setLabel(boardId: number, stackId: number, cardId: number, labelId: number, on: boolean): Promise<void> {
    parseDeckId(labelId, 'labelId');
    await this.#rest<unknown>(
      'PUT',
      `/boards/{boardId}/stacks/{stackId}/cards/{cardId}/${on ? 'assignLabel' : 'removeLabel'}`,
      { boardId, stackId, cardId },
      { labelId },
    );
  }

  /** Deck matches an unassignment on participant and type, so a group needs its type (1). */
  async setAssignee(boardId: number, stackId: number, cardId: number, participant: string, on: boolean, type = ASSIGN_USER): Promise<void> {
    const body = type === ASSIGN_USER ? { userId: participant } : { userId: participant, type };
    await this.#rest<unknown>(
      'PUT',
      `/boards/{boardId}/stacks/{stackId}/cards/{cardId}/${on ? 'assignUser' : 'unassignUser'}`,
      { boardId, stackId, cardId },
      body,
    );
  }

  /** Moves a card within its board (test/fixtures/nextcloud29/90-deck.json `moveCardToDone`); Deck < 1.16 ignores `order`. */
  async reorderCard(boardId: number, stackId: number, cardId: number, toStackId: number, order: number): Promise<void> {
    parseDeckId(toStackId, 'toStackId');
    await this.#rest<unknown>('PUT', '/boards/{boardId}/stacks/{stackId}/cards/{cardId}/reorder', { boardId, stackId, cardId }, { order, stackId: toStackId });
  }

  async createBoard(title: string, color: string): Promise<DeckBoard> {
    return toBoard(await this.#rest<unknown>('POST', '/boards', {}, { title, color }));
  }

  /**
   * Deck 1.17 needs title and color (400 without either) and takes a missing `archived` as false,
   * which unarchives (test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json), so all three are sent.
   */
  async updateBoard(boardId: number, fields: { title: string; color: string; archived: boolean }): Promise<DeckBoard> {
    return toBoard(await this.#rest<unknown>('PUT', '/boards/{boardId}', { boardId }, { title: fields.title, color: fields.color, archived: fields.archived }));
  }

  /** Deck 1.17 needs `order` (400 without it) and does not renumber the other stacks. */
  async createStack(boardId: number, title: string, order: number): Promise<DeckStack> {
    return toStack(await this.#rest<unknown>('POST', '/boards/{boardId}/stacks', { boardId }, { title, order }));
  }

  /**
   * `boardId` must be the stack's board as the server listed it: Deck 1.17 makes the URL's board
   * the stack's board (updateStackOtherBoardUrl in test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json moved a stack to another board).
   */
  async updateStack(boardId: number, stackId: number, title: string, order: number): Promise<DeckStack> {
    return toStack(await this.#rest<unknown>('PUT', '/boards/{boardId}/stacks/{stackId}', { boardId, stackId }, { title, order }));
  }

  async deleteStack(boardId: number, stackId: number): Promise<void> {
    await this.#rest<unknown>('DELETE', '/boards/{boardId}/stacks/{stackId}', { boardId, stackId });
  }

  /** Deck 1.17: title and color are required; a title already on the board (exactly) is a 400 "title must be unique". */
  async createLabel(boardId: number, title: string, color: string): Promise<DeckLabel> {
    return toLabel(await this.#rest<unknown>('POST', '/boards/{boardId}/labels', { boardId }, { title, color }));
  }

  async updateLabel(boardId: number, labelId: number, title: string, color: string): Promise<DeckLabel> {
    return toLabel(await this.#rest<unknown>('PUT', '/boards/{boardId}/labels/{labelId}', { boardId, labelId }, { title, color }));
  }

  /** Deck takes the label off every card that has it. */
  async deleteLabel(boardId: number, labelId: number): Promise<void> {
    await this.#rest<unknown>('DELETE', '/boards/{boardId}/labels/{labelId}', { boardId, labelId });
  }

  /** Deck's version from `cloud/capabilities` as the user, or null when it cannot be read. */
  async version(): Promise<string | null> {
    try {
      const data = await this.#session.ocs<{ capabilities?: unknown } | null>('GET', '/ocs/v2.php/cloud/capabilities', { timeoutMs: 10_000 });
      return deckVersion(data?.capabilities);
    } catch (err) {
      if (err instanceof NextcloudError) return null;
      throw err;
    }
  }

  async comments(cardId: number, limit: number, offset: number): Promise<DeckComment[]> {
    parseDeckId(cardId, 'cardId');
    const data = await this.#session.ocs<unknown>('GET', `${OCS}/cards/{cardId}/comments`, { params: { cardId }, query: { limit, offset } });
    return list(data).map(toComment);
  }

  async addComment(cardId: number, message: string, parentId: number | null): Promise<DeckComment> {
    parseDeckId(cardId, 'cardId');
    return toComment(await this.#session.ocs<unknown>('POST', `${OCS}/cards/{cardId}/comments`, { params: { cardId }, body: { message, parentId } }));
  }

  async updateComment(cardId: number, commentId: number, message: string): Promise<DeckComment> {
    parseDeckId(cardId, 'cardId');
    parseDeckId(commentId, 'commentId');
    return toComment(
      await this.#session.ocs<unknown>('PUT', `${OCS}/cards/{cardId}/comments/{commentId}`, { params: { cardId, commentId }, body: { message } }),
    );
  }

  async deleteComment(cardId: number, commentId: number): Promise<void> {
    parseDeckId(cardId, 'cardId');
    parseDeckId(commentId, 'commentId');
    await this.#session.ocs<unknown>('DELETE', `${OCS}/cards/{cardId}/comments/{commentId}`, { params: { cardId, commentId } });
  }
}
