// What the Deck tools share: limits, argument schemas, how cards and comments are shown to the
// model, and the label and assignee changes around a card write.
import { NextcloudError } from '../../nextcloud/errors.ts';
import { isoUtc, resolveEventTime } from '../calendar/time-zones.ts';
import { InvalidArgumentError } from '../files/user-paths.ts';
import type { Capabilities } from '../first-party-capabilities.ts';
import { nextcloudMessage, type ToolEnv } from '../first-party-tool.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import {
  ASSIGN_GROUP,
  type DeckAssignee,
  type DeckCard,
  type DeckComment,
  type DeckLabel,
  type DeckStack,
  type DeckUser,
  parseDeckId,
} from '../../nextcloud/deck.ts';
import { assignedGroups, assignedUsers, type CardOnBoard, cardState, deckApi, findCard, openBoard, openCard, sameState } from './deck-resolve.ts';

export const MAX_TITLE = 255;
export const MAX_DESCRIPTION = 20_000;
export const MAX_COMMENT = 1000;
export const MAX_CARDS = 200;

export const MAX_LABEL_TITLE = 100;

/** A Deck colour: six hex digits, with or without '#' (Deck stores them without), or `fallback` when none is given. */
export function parseColor(args: Record<string, unknown>, fallback: string | undefined): string | undefined {
  const raw = args['color'];
  if (raw === undefined || raw === null || raw === '') return fallback;
  if (typeof raw !== 'string' || !/^#?[0-9a-fA-F]{6}$/.test(raw.trim())) throw new InvalidArgumentError('color must be six hex digits, e.g. 0082c9 or #0082c9');
  return raw.trim().replace(/^#/, '').toLowerCase();
}

export const available = (c: Capabilities): boolean => c.has('deck');

export const BOARD_ID = { type: 'integer', description: 'Board id from deck_list_boards.' };
export const CARD_ID = { type: 'integer', description: 'Card id from deck_list_cards.' };
export const LABELS = {
  type: 'array',
  items: { type: 'string', description: 'A label title or label id.' },
  description: 'Labels of the board, by exact title or id (see deck_get_board).',
};
export const ASSIGNEES = {
  type: 'array',
  items: { type: 'string' },
  description: "User ids of board members (see deck_get_board), never display names. Assigning someone else notifies them and needs the user's confirmation.",
};
export const DUE = { type: 'string', description: 'Due date-time in ISO 8601 with a UTC offset (2027-03-05T10:00:00+01:00), or local time plus timezone.' };
export const TIMEZONE = { type: 'string', description: 'IANA time zone for a dueDate without an offset, e.g. Europe/Berlin.' };

/** A label of another board (left by a move in Deck 1.13) is marked: that board's label cannot be used here. */
export function labelView(l: DeckLabel, boardId?: number): Record<string, unknown> {
  return { id: l.id, title: l.title, ...(boardId && l.boardId && l.boardId !== boardId ? { otherBoard: l.boardId } : {}) };
}

/** Groups and teams are listed apart from users: their ids are not user ids. */
export function assigneesView(card: DeckCard): Record<string, unknown> {
  // Deck lists archived cards without their assignments; the tools never guess them.
  if (!card.detailed) return { assignees: 'unknown', comments: 'unknown' };
  const groups = assignedGroups(card).map((g) => ({ id: g.participant, name: g.displayName, type: g.type === ASSIGN_GROUP ? 'group' : 'team' }));
  return { assignees: assignedUsers(card).map((u) => u.participant), ...(groups.length > 0 ? { assignedGroups: groups } : {}), comments: card.commentsCount };
}

export function cardView(card: DeckCard, stack?: DeckStack): Record<string, unknown> {
  return {
    id: card.id,
    title: card.title,
    stackId: card.stackId,
    ...(stack ? { stack: stack.title } : {}),
    ...(card.description ? { description: card.description.slice(0, 1000) } : {}),
    dueDate: card.duedate,
    ...(card.done ? { done: card.done } : {}),
    labels: card.labels.map((l) => labelView(l, stack?.boardId)),
    ...(card.archived ? { archived: true } : {}),
    order: card.order,
    ...assigneesView(card),
  };
}

export function commentView(c: DeckComment): Record<string, unknown> {
  return { id: c.id, author: c.actorId, authorName: c.actorDisplayName, created: c.created, message: c.message, ...(c.replyTo ? { replyTo: c.replyTo } : {}) };
}

export function people(users: DeckUser[]): string {
  return users.map((u) => `${u.displayName} (${u.uid})`).join(', ');
}

/** Deck stores ISO 8601; like test/fixtures/nextcloud29/90-deck.json we send UTC with an explicit +00:00. */
export function parseDueDate(args: Record<string, unknown>): string | undefined {
  const raw = args['dueDate'];
  if (raw === undefined || raw === null || raw === '') {
    if (args['timezone'] !== undefined && args['timezone'] !== null && args['timezone'] !== '')
      resolveEventTime('2000-01-01T00:00:00', args['timezone'], 'timezone');
    return undefined;
  }
  const t = resolveEventTime(raw, args['timezone'], 'dueDate');
  return isoUtc(t.utcMs).replace(/Z$/, '+00:00');
}

export function describeDue(iso: string | null): string {
  return iso === null ? 'no due date' : `due ${iso.slice(0, 16).replace('T', ' ')} UTC`;
}

export function othersAmong(users: DeckUser[], self: string): DeckUser[] {
  return users.filter((u) => u.uid !== self);
}

export type Unassign = Pick<DeckAssignee, 'participant' | 'type'>;

export const NO_EXTRAS = { addLabels: [], removeLabels: [], addAssignees: [], removeAssignees: [] };

/** Label and assignee changes around a card write: a failure is reported, not hidden. */
export async function applyExtras(
  env: ToolEnv,
  loc: { boardId: number; stackId: number; cardId: number },
  ops: { addLabels: number[]; removeLabels: number[]; addAssignees: string[]; removeAssignees: Unassign[] },
): Promise<string[]> {
  const api = deckApi(env);
  const problems: string[] = [];
  const attempt = async (what: string, fn: () => Promise<void>): Promise<void> => {
    try {
      await fn();
    } catch (err) {
      if (err instanceof NextcloudError) problems.push(`${what}: ${nextcloudMessage(err) || 'refused'}`);
      else throw err;
    }
  };
  for (const id of ops.addLabels) await attempt(`label ${id} not added`, () => api.setLabel(loc.boardId, loc.stackId, loc.cardId, id, true));
  for (const id of ops.removeLabels) await attempt(`label ${id} not removed`, () => api.setLabel(loc.boardId, loc.stackId, loc.cardId, id, false));
  for (const uid of ops.addAssignees) await attempt(`${uid} not assigned`, () => api.setAssignee(loc.boardId, loc.stackId, loc.cardId, uid, true));
  for (const a of ops.removeAssignees)
    await attempt(`${a.participant} not unassigned`, () => api.setAssignee(loc.boardId, loc.stackId, loc.cardId, a.participant, false, a.type));
  return problems;
}

export async function reloadLoc(env: ToolEnv, boardId: number, cardId: number): Promise<CardOnBoard | null> {
  try {
    return await findCard(env, await openBoard(env, boardId), cardId);
  } catch {
    return null;
  }
}

export async function reloadCard(env: ToolEnv, boardId: number, cardId: number): Promise<Record<string, unknown> | null> {
  const loc = await reloadLoc(env, boardId, cardId);
  return loc ? cardView(loc.card, loc.stack) : null;
}

export function numbers(v: unknown): number[] {
  return Array.isArray(v) ? v.map((x) => parseDeckId(x, 'id')) : [];
}

export function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.map(String) : [];
}

/** Re-locates the bound card and refuses if anything about it changed since prepare. */
export async function boundCard(env: ToolEnv, action: { args: Record<string, unknown>; binding: Record<string, unknown> }): Promise<CardOnBoard | ToolResult> {
  const loc = await openCard(env, { boardId: action.binding['boardId'], cardId: action.binding['cardId'] });
  if (!sameState(action.binding, cardState(loc)))
    return errorResult(`ERROR: Card ${loc.card.id} changed since this was prepared. Nothing was done; look at it again with deck_list_cards.`);
  return loc;
}

export function isLoc(x: CardOnBoard | ToolResult): x is CardOnBoard {
  return 'card' in x;
}
