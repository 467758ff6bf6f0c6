// Finds the Deck objects a tool call names, as the invoking user, in the order that keeps
// scope honest: the board first (checked against the assignment's scope), then the stack or
// card inside it as the server lists them. A card or comment id is used only once the
// server has shown it on that board, so an id from another board never rides on an
// in-scope board id (Deck itself ignores the board and stack parts of card URLs).
import { InvalidArgumentError } from '../files/user-paths.ts';
import type { RiskClass, ToolEnv } from '../first-party-tool.ts';
import { assertBoardInScope } from '../resource-scope.ts';
import {
  ASSIGN_USER,
  DeckApi,
  parseDeckId,
  type DeckAssignee,
  type DeckBoard,
  type DeckCard,
  type DeckComment,
  type DeckLabel,
  type DeckStack,
  type DeckUser,
} from '../../nextcloud/deck.ts';

const MAX_LIST = 20;
const UID = /^[A-Za-z0-9 _.@\-']{1,64}$/;
const COMMENT_PAGE = 100;
const COMMENT_PAGES = 10;

export function deckApi(env: ToolEnv): DeckApi {
  return new DeckApi(env.session);
}

export interface CardOnBoard {
  board: DeckBoard;
  stack: DeckStack;
  card: DeckCard;
}

/** The board as the user sees it, after the scope check (S2 parse first, then scope, then the server). */
export async function openBoard(env: ToolEnv, input: unknown, field = 'boardId'): Promise<DeckBoard> {
  const id = parseDeckId(input, field);
  assertBoardInScope(env.scope, id);
  const board = await deckApi(env).board(id);
  if (board.id !== id) throw new InvalidArgumentError(`Deck did not return board ${id}`);
  if (board.deleted) throw new InvalidArgumentError(`board ${id} was deleted`);
  return board;
}

/** Edit rights, on a board that is not archived: Deck keeps PERMISSION_EDIT on archived boards but refuses every write there with HTTP 500. */
export function requireEdit(board: DeckBoard): void {
  if (!board.permissions.edit) throw new InvalidArgumentError(`you may only read the board "${board.title}" (${board.id})`);
  if (board.archived)
    throw new InvalidArgumentError(
      `the board "${board.title}" (${board.id}) is archived, and Deck allows no changes on it; it must be unarchived in Deck first`,
    );
}

/** The right to manage the board (boards, stacks and labels), on a board that is not archived (Deck answers 500 there). */
export function requireManage(board: DeckBoard, what: string): void {
  if (!board.permissions.manage)
    throw new InvalidArgumentError(`${what} needs the right to manage the board "${board.title}" (${board.id}), which you do not have`);
  if (board.archived)
    throw new InvalidArgumentError(
      `the board "${board.title}" (${board.id}) is archived, and Deck allows no changes on it; unarchive it first (deck_archive_board with archive: false)`,
    );
}

/** Whether anyone but the user works on the board: its members, or a group or team it is shared with. */
export function sharedWithOthers(board: DeckBoard, self: string): boolean {
  return [...boardMembers(board).keys()].some((uid) => uid !== self) || board.acl.some((a) => a.type !== ASSIGN_USER);
}

/** S6: a write on a board someone else works on reaches them (outward); on a board only the user sees, it is private. */
export function boardRisk(board: DeckBoard, env: ToolEnv): RiskClass {
  return sharedWithOthers(board, env.user.uid) ? 'outward' : 'private';
}

export function describeBoard(board: DeckBoard): string {
  return `"${board.title}" (${board.id})`;
}

/** A stack of this board, from the server's own listing of the board's stacks. */
export async function findStack(env: ToolEnv, board: DeckBoard, input: unknown, field = 'stackId'): Promise<DeckStack> {
  const id = parseDeckId(input, field);
  const stacks = await deckApi(env).stacks(board.id);
  const stack = stacks.find((s) => s.id === id && s.boardId === board.id);
  if (!stack) {
    const known = stacks
      .filter((s) => s.boardId === board.id)
      .map((s) => `${s.id} "${s.title}"`)
      .join(', ');
    throw new InvalidArgumentError(`stack ${id} is not on the board ${describeBoard(board)}; its stacks: ${known || 'none'}`);
  }
  return stack;
}

/** The card where the server lists it on this board (open cards first, then archived ones). */
export async function findCard(env: ToolEnv, board: DeckBoard, input: unknown, field = 'cardId'): Promise<CardOnBoard> {
  const id = parseDeckId(input, field);
  const api = deckApi(env);
  const inStacks = (stacks: DeckStack[]): CardOnBoard | null => {
    for (const stack of stacks) {
      if (stack.boardId !== board.id) continue;
      const card = stack.cards.find((c) => c.id === id);
      if (card && card.stackId === stack.id) return { board, stack, card };
    }
    return null;
  };
  const open = inStacks(await api.stacks(board.id));
  if (open) return open;
  const archived = inStacks(await api.archivedStacks(board.id));
  if (archived) return { ...archived, card: await detailedCard(api, archived) };
  throw new InvalidArgumentError(`card ${id} is not on the board ${describeBoard(board)}; use deck_list_cards to find it`);
}

/** Deck's archived listing has no assignees or comment count: the card itself has them. */
async function detailedCard(api: DeckApi, loc: CardOnBoard): Promise<DeckCard> {
  if (loc.card.detailed) return loc.card;
  const card = await api.card(loc.board.id, loc.stack.id, loc.card.id);
  if (card.id !== loc.card.id || card.stackId !== loc.stack.id)
    throw new InvalidArgumentError(`card ${loc.card.id} is not on the board ${describeBoard(loc.board)}; use deck_list_cards to find it`);
  return card;
}

/** Board, then card: the usual first two steps of a card tool. */
export async function openCard(env: ToolEnv, args: Record<string, unknown>): Promise<CardOnBoard> {
  const board = await openBoard(env, args['boardId']);
  return findCard(env, board, args['cardId']);
}

/** Everyone Deck lets work on the board: the owner, its users and the users of its ACL. */
export function boardMembers(board: DeckBoard): Map<string, string> {
  const out = new Map<string, string>();
  const add = (u: DeckUser): void => {
    if (u.uid !== '' && !out.has(u.uid)) out.set(u.uid, u.displayName || u.uid);
  };
  add(board.owner);
  for (const u of board.users) add(u);
  for (const a of board.acl) if (a.type === 0) add({ uid: a.participant, displayName: a.displayName });
  return out;
}

/** Whether an assignee can still see the board: a user among its members, a group or team in its ACL. */
export function reachesBoard(board: DeckBoard, a: DeckAssignee): boolean {
  if (a.type === ASSIGN_USER) return boardMembers(board).has(a.participant);
  return board.acl.some((acl) => acl.type === a.type && acl.participant === a.participant);
}

/** The users among a card's assignees (a group id is never taken for a user id). */
export function assignedUsers(card: DeckCard): DeckAssignee[] {
  return card.assignees.filter((a) => a.type === ASSIGN_USER);
}

/** The groups (and teams) among a card's assignees. */
export function assignedGroups(card: DeckCard): DeckAssignee[] {
  return card.assignees.filter((a) => a.type !== ASSIGN_USER);
}

function listArg(input: unknown, field: string): unknown[] {
  if (input === undefined || input === null) return [];
  if (!Array.isArray(input) || input.length > MAX_LIST) throw new InvalidArgumentError(`${field} must be a list of at most ${MAX_LIST} entries`);
  return input;
}

/** Labels by id or by title, only from the board's own labels. */
export function resolveLabels(board: DeckBoard, input: unknown, field: string): DeckLabel[] {
  const out: DeckLabel[] = [];
  const known = (): string => board.labels.map((l) => `${l.id} "${l.title}"`).join(', ') || 'none';
  for (const item of listArg(input, field)) {
    let found: DeckLabel | undefined;
    if (typeof item === 'number') {
      const id = parseDeckId(item, field);
      found = board.labels.find((l) => l.id === id);
    } else if (typeof item === 'string' && item.trim() !== '' && item.length <= 100) {
      const want = item.trim().toLowerCase();
      const byTitle = board.labels.filter((l) => l.title.trim().toLowerCase() === want);
      if (byTitle.length > 1) throw new InvalidArgumentError(`several labels of the board are called "${item.trim()}"; give the label id (${known()})`);
      found = byTitle[0] ?? (/^[1-9][0-9]{0,15}$/.test(item) ? board.labels.find((l) => l.id === Number(item)) : undefined);
    } else {
      throw new InvalidArgumentError(`${field}: each label is a label id or a label title of the board`);
    }
    if (!found)
      throw new InvalidArgumentError(`the board ${describeBoard(board)} has no label ${JSON.stringify(String(item).slice(0, 60))}; its labels: ${known()}`);
    if (!out.some((l) => l.id === found.id)) out.push(found);
  }
  return out;
}

/** Assignees by user id, only among the board's members (never a display name, S5). */
export function resolveAssignees(board: DeckBoard, input: unknown, field: string): DeckUser[] {
  const members = boardMembers(board);
  const out: DeckUser[] = [];
  for (const item of listArg(input, field)) {
    if (typeof item !== 'string' || !UID.test(item) || item.trim() !== item)
      throw new InvalidArgumentError(`${field}: each entry must be a Nextcloud user id (as in a mention), not a display name`);
    const name = members.get(item);
    if (name === undefined) {
      const list = [...members].map(([uid, n]) => `${uid} (${n})`).join(', ');
      throw new InvalidArgumentError(`"${item}" is not a member of the board ${describeBoard(board)}; members: ${list}`);
    }
    if (!out.some((u) => u.uid === item)) out.push({ uid: item, displayName: name });
  }
  return out;
}

/** A comment of this card, found by paging through the card's comments as the user. */
export async function findComment(env: ToolEnv, cardId: number, input: unknown, field = 'commentId'): Promise<DeckComment> {
  const id = parseDeckId(input, field);
  const api = deckApi(env);
  for (let page = 0; page < COMMENT_PAGES; page++) {
    const batch = await api.comments(cardId, COMMENT_PAGE, page * COMMENT_PAGE);
    const hit = batch.find((c) => c.id === id);
    if (hit) {
      if (hit.cardId !== 0 && hit.cardId !== cardId) break;
      return hit;
    }
    if (batch.length < COMMENT_PAGE) break;
  }
  throw new InvalidArgumentError(`comment ${id} is not on card ${cardId}; use deck_list_comments`);
}

/** The state a card-changing action is bound to (S7): any change in between refuses the action. */
export function cardState(loc: CardOnBoard): Record<string, unknown> {
  const c = loc.card;
  return {
    boardId: loc.board.id,
    stackId: loc.stack.id,
    cardId: c.id,
    lastModified: c.lastModified,
    title: c.title,
    description: c.description,
    duedate: c.duedate,
    done: c.done,
    type: c.type,
    archived: c.archived,
    labels: c.labels
      .map((l) => l.id)
      .sort((a, b) => a - b)
      .join(','),
    assignees: c.assignees
      .map((a) => `${a.type}:${a.participant}`)
      .sort()
      .join(','),
  };
}

export function sameState(bound: Record<string, unknown>, now: Record<string, unknown>): boolean {
  return Object.keys(now).every((k) => (bound[k] ?? null) === (now[k] ?? null));
}

/** `@uid` or `@"user id"` mentions other than the user's own: those people get notified. */
export function mentionsOthers(message: string, self: string): string[] {
  const out = new Set<string>();
  for (const m of message.matchAll(/(?:^|[^\w@])@(?:"([^"\n]{1,64})"|([A-Za-z0-9_.\-']{1,64}))/g)) {
    const uid = (m[1] ?? m[2] ?? '').replace(/[.']+$/, '');
    if (uid !== '' && uid !== self) out.add(uid);
  }
  return [...out];
}
