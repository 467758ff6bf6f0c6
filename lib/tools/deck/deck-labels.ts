// Labels of a Deck board as the invoking user: create, rename (or recolour) and delete. Putting
// labels on cards is deck_update_card's. All need the right to manage the board, as Deck checks.
// Deleting a label takes it off every card that has it, so it always needs confirmation.
import { InvalidArgumentError } from '../files/user-paths.ts';
import {
  guarded,
  guardedPrepare,
  jsonResult,
  objectSchema,
  optionalString,
  requiredString,
  type FirstPartyTool,
  type PreparedAction,
  type ToolEnv,
} from '../first-party-tool.ts';
import { destructivePolicy, writePolicy } from '../tool-policy.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import { parseDeckId, type DeckBoard, type DeckLabel } from '../../nextcloud/deck.ts';
import { boardRisk, deckApi, describeBoard, openBoard, requireManage, sameState } from './deck-resolve.ts';
import { available, BOARD_ID, labelView, MAX_LABEL_TITLE, parseColor } from './deck-views.ts';

const LABEL_ID = { type: 'integer', description: 'Label id from deck_get_board.' };
const DEFAULT_LABEL_COLOR = '31cc7c';

function labelTitle(args: Record<string, unknown>, required: boolean): string | undefined {
  const raw = required ? requiredString(args, 'title', MAX_LABEL_TITLE) : optionalString(args, 'title', MAX_LABEL_TITLE);
  const title = raw?.trim();
  if (title === '') throw new InvalidArgumentError('title cannot be empty');
  return title;
}

/**
 * Deck refuses a title the board has exactly ("title must be unique"); labels are also found by
 * title regardless of case (deck-resolve.ts), so a title differing only in case is refused too.
 */
function assertFreeTitle(board: DeckBoard, title: string, except: number | null): void {
  const clash = board.labels.find((l) => l.id !== except && l.title.trim().toLowerCase() === title.toLowerCase());
  if (clash) throw new InvalidArgumentError(`the board ${describeBoard(board)} already has the label "${clash.title}" (${clash.id}); label titles must differ`);
}

function findLabel(board: DeckBoard, input: unknown): DeckLabel {
  const id = parseDeckId(input, 'labelId');
  const label = board.labels.find((l) => l.id === id);
  if (!label)
    throw new InvalidArgumentError(
      `label ${id} is not on the board ${describeBoard(board)}; its labels: ${board.labels.map((l) => `${l.id} "${l.title}"`).join(', ') || 'none'}`,
    );
  return label;
}

function labelState(board: DeckBoard, label: DeckLabel): Record<string, unknown> {
  return { boardId: board.id, labelId: label.id, title: label.title, color: label.color };
}

/** The board and label again, refused when the label changed since prepare (S7). */
async function boundLabel(env: ToolEnv, binding: Record<string, unknown>, what: string): Promise<{ board: DeckBoard; label: DeckLabel } | ToolResult> {
  const board = await openBoard(env, binding['boardId']);
  requireManage(board, what);
  const label = findLabel(board, binding['labelId']);
  if (!sameState(binding, labelState(board, label)))
    return errorResult(`ERROR: Label ${label.id} changed since this was prepared. Nothing was done; look at it again with deck_get_board.`);
  return { board, label };
}

/** The open and archived cards of the board that carry the label. */
async function cardsWith(env: ToolEnv, board: DeckBoard, labelId: number): Promise<Array<{ id: number; title: string }>> {
  const api = deckApi(env);
  const out: Array<{ id: number; title: string }> = [];
  for (const stack of [...(await api.stacks(board.id)), ...(await api.archivedStacks(board.id))]) {
    if (stack.boardId !== board.id) continue;
    for (const c of stack.cards) if (c.labels.some((l) => l.id === labelId) && !out.some((x) => x.id === c.id)) out.push({ id: c.id, title: c.title });
  }
  return out.sort((a, b) => a.id - b.id);
}

export const deckCreateLabel: FirstPartyTool = {
  family: 'deck',
  risk: 'by-visibility',
  taints: false,
  available,
  definition: {
    name: 'deck_create_label',
    description:
      "Adds a label to a Deck board (then put it on cards with deck_update_card). Titles must differ from the board's other labels. Needs the right to manage the board.",
    schema: objectSchema(
      {
        boardId: BOARD_ID,
        title: { type: 'string', description: 'Label title (at most 100 characters).' },
        color: { type: 'string', description: 'Optional colour, six hex digits (31cc7c).' },
      },
      ['boardId', 'title'],
    ),
    policy: writePolicy(),
    label: 'Create a Deck label',
    summary: 'Add a label to a board',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const title = labelTitle(args, true) ?? '';
      const color = parseColor(args, DEFAULT_LABEL_COLOR) ?? DEFAULT_LABEL_COLOR;
      const board = await openBoard(env, args['boardId']);
      requireManage(board, 'adding a label');
      assertFreeTitle(board, title, null);
      return {
        args: { boardId: board.id, title, color },
        binding: { boardId: board.id },
        description: `add the label "${title}" (colour ${color}) to the board ${describeBoard(board)}`,
        confirmReason: null,
        risk: boardRisk(board, env),
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const board = await openBoard(env, action.binding['boardId']);
      requireManage(board, 'adding a label');
      const title = String(action.args['title']);
      assertFreeTitle(board, title, null);
      const label = await deckApi(env).createLabel(board.id, title, String(action.args['color']));
      return jsonResult({ created: { ...labelView(label), color: label.color, board: board.id } });
    }),
};

export const deckUpdateLabel: FirstPartyTool = {
  family: 'deck',
  risk: 'by-visibility',
  taints: false,
  available,
  definition: {
    name: 'deck_update_label',
    description: 'Renames a label of a Deck board or changes its colour; every card with the label shows the change. Needs the right to manage the board.',
    schema: objectSchema(
      {
        boardId: BOARD_ID,
        labelId: LABEL_ID,
        title: { type: 'string', description: 'New title.' },
        color: { type: 'string', description: 'New colour, six hex digits.' },
      },
      ['boardId', 'labelId'],
    ),
    policy: writePolicy(),
    label: 'Rename a Deck label',
    summary: 'Rename or recolour a label',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const title = labelTitle(args, false);
      const color = parseColor(args, undefined);
      if (title === undefined && color === undefined) throw new InvalidArgumentError('nothing to change: give a title or a color');
      const board = await openBoard(env, args['boardId']);
      requireManage(board, 'changing a label');
      const label = findLabel(board, args['labelId']);
      const next = { title: title ?? label.title, color: color ?? label.color };
      if (next.title !== label.title) assertFreeTitle(board, next.title, label.id);
      const changes = [
        ...(next.title !== label.title ? [`rename it to "${next.title}"`] : []),
        ...(next.color.toLowerCase() !== label.color.toLowerCase() ? [`colour ${next.color}`] : []),
      ];
      if (changes.length === 0) return errorResult(`ERROR: Label ${label.id} already looks like that; nothing to change.`);
      return {
        args: { boardId: board.id, labelId: label.id, ...next },
        binding: labelState(board, label),
        description: `change the label "${label.title}" (${label.id}) of the board ${describeBoard(board)}: ${changes.join('; ')}`,
        confirmReason: null,
        risk: boardRisk(board, env),
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const bound = await boundLabel(env, action.binding, 'changing a label');
      if (!('board' in bound)) return bound;
      const title = String(action.args['title']);
      if (title !== bound.label.title) assertFreeTitle(bound.board, title, bound.label.id);
      const label = await deckApi(env).updateLabel(bound.board.id, bound.label.id, title, String(action.args['color']));
      return jsonResult({ updated: { ...labelView(label), color: label.color, board: bound.board.id } });
    }),
};

export const deckDeleteLabel: FirstPartyTool = {
  family: 'deck',
  risk: 'destructive',
  taints: false,
  available,
  definition: {
    name: 'deck_delete_label',
    description:
      "Deletes a label of a Deck board; Deck takes it off every card that has it. Always needs the user's confirmation. Needs the right to manage the board.",
    schema: objectSchema({ boardId: BOARD_ID, labelId: LABEL_ID }, ['boardId', 'labelId']),
    policy: destructivePolicy(),
    label: 'Delete a Deck label',
    summary: 'Delete a label, with your confirmation',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const board = await openBoard(env, args['boardId']);
      requireManage(board, 'deleting a label');
      const label = findLabel(board, args['labelId']);
      const cards = await cardsWith(env, board, label.id);
      const on =
        cards.length === 0
          ? 'no card has it'
          : `it comes off ${cards.length} card${cards.length === 1 ? '' : 's'}: ${cards
              .slice(0, 10)
              .map((c) => `"${c.title}" (${c.id})`)
              .join(', ')}${cards.length > 10 ? ', …' : ''}`;
      return {
        args: { boardId: board.id, labelId: label.id },
        binding: { ...labelState(board, label), cards: cards.map((c) => c.id).join(',') },
        description: `delete the label "${label.title}" (${label.id}) of the board ${describeBoard(board)}; ${on}`,
        confirmReason: 'deleting a label',
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const board = await openBoard(env, action.binding['boardId']);
      requireManage(board, 'deleting a label');
      const label = findLabel(board, action.binding['labelId']);
      const cards = await cardsWith(env, board, label.id);
      if (!sameState(action.binding, { ...labelState(board, label), cards: cards.map((c) => c.id).join(',') }))
        return errorResult(
          `ERROR: Label ${label.id} or the cards that have it changed since this was prepared. Nothing was done; look again with deck_get_board.`,
        );
      await deckApi(env).deleteLabel(board.id, label.id);
      return jsonResult({ deleted: { labelId: label.id, title: label.title, board: board.id, takenOffCards: cards.length } });
    }),
};
