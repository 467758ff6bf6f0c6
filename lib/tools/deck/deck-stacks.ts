// Deck stacks (columns) as the invoking user: create, rename, reorder and delete (with confirmation).
// All of them need the right to manage the board, as Deck checks (403 for editors).
import { InvalidArgumentError } from '../files/user-paths.ts';
import {
  guarded,
  guardedPrepare,
  jsonResult,
  objectSchema,
  optionalInteger,
  optionalString,
  requiredString,
  type FirstPartyTool,
  type PreparedAction,
  type ToolEnv,
} from '../first-party-tool.ts';
import { destructivePolicy, writePolicy } from '../tool-policy.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import type { DeckBoard, DeckStack } from '../../nextcloud/deck.ts';
import { boardRisk, deckApi, describeBoard, findStack, openBoard, requireManage, sameState } from './deck-resolve.ts';
import { available, BOARD_ID, MAX_TITLE } from './deck-views.ts';

const STACK_ID = { type: 'integer', description: 'Stack id from deck_get_board.' };

function stackState(board: DeckBoard, stack: DeckStack): Record<string, unknown> {
  return {
    boardId: board.id,
    stackId: stack.id,
    title: stack.title,
    cards: stack.cards
      .map((c) => c.id)
      .sort((x, y) => x - y)
      .join(','),
  };
}

export const deckDeleteStack: FirstPartyTool = {
  family: 'deck',
  risk: 'destructive',
  taints: false,
  available,
  definition: {
    name: 'deck_delete_stack',
    description: "Deletes a stack (column) of a Deck board with all its cards. Always needs the user's confirmation.",
    schema: objectSchema({ boardId: BOARD_ID, stackId: STACK_ID }, ['boardId', 'stackId']),
    policy: destructivePolicy(),
    label: 'Delete a Deck stack',
    summary: 'Delete a column with its cards, with your confirmation',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const board = await openBoard(env, args['boardId']);
      if (!board.permissions.manage) throw new InvalidArgumentError(`deleting a stack needs the right to manage the board ${describeBoard(board)}`);
      const stack = await findStack(env, board, args['stackId']);
      return {
        args: { boardId: board.id, stackId: stack.id },
        binding: stackState(board, stack),
        description: `delete the stack "${stack.title}" (${stack.id}) of the board ${describeBoard(board)} with its ${stack.cards.length} open card${stack.cards.length === 1 ? '' : 's'}`,
        confirmReason: 'deleting a stack with its cards',
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const board = await openBoard(env, action.binding['boardId']);
      const stack = await findStack(env, board, action.binding['stackId']);
      if (!sameState(action.binding, stackState(board, stack)))
        return errorResult(`ERROR: Stack ${stack.id} changed since this was prepared. Nothing was done; look at it again with deck_get_board.`);
      await deckApi(env).deleteStack(board.id, stack.id);
      return jsonResult({ deleted: { stackId: stack.id, title: stack.title, board: board.id } });
    }),
};

// --- create, rename, reorder (manage right; test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json) ---

/** The board's stacks left to right as Deck shows them (by order, then id). */
function ordered(board: DeckBoard, stacks: DeckStack[]): DeckStack[] {
  return stacks.filter((s) => s.boardId === board.id).sort((a, b) => a.order - b.order || a.id - b.id);
}

/** The left-to-right sequence a reorder is bound to. */
function sequence(stacks: DeckStack[]): string {
  return stacks.map((s) => `${s.id}:${s.order}`).join(',');
}

function stackTitle(args: Record<string, unknown>, required: boolean): string | undefined {
  const raw = required ? requiredString(args, 'title', MAX_TITLE) : optionalString(args, 'title', MAX_TITLE);
  const title = raw?.trim();
  if (title === '') throw new InvalidArgumentError('title cannot be empty');
  return title;
}

/**
 * Deck 1.17 does not renumber stacks (reorderStack in the Deck 1.17 fixture left two stacks at order 0), so every
 * stack whose place changes gets its index as its order. Each update names the board the server
 * listed the stack on: Deck moves a stack to the board of the URL (updateStackOtherBoardUrl in test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json).
 */
async function renumber(env: ToolEnv, board: DeckBoard, wanted: DeckStack[], titles: Map<number, string>): Promise<void> {
  const api = deckApi(env);
  for (const [i, s] of wanted.entries()) {
    const title = titles.get(s.id) ?? s.title;
    if (s.order !== i || title !== s.title) await api.updateStack(board.id, s.id, title, i);
  }
}

function place(stacks: DeckStack[], stack: DeckStack, position: number): DeckStack[] {
  const rest = stacks.filter((s) => s.id !== stack.id);
  rest.splice(Math.min(position, rest.length), 0, stack);
  return rest;
}

const POSITION = { type: 'integer', description: 'Place from the left, 0 = first. Default: last.' };

export const deckCreateStack: FirstPartyTool = {
  family: 'deck',
  risk: 'by-visibility',
  taints: false,
  available,
  definition: {
    name: 'deck_create_stack',
    description: 'Adds a stack (column) to a Deck board, last or at a given place. Needs the right to manage the board.',
    schema: objectSchema({ boardId: BOARD_ID, title: { type: 'string', description: 'Stack title (at most 255 characters).' }, position: POSITION }, [
      'boardId',
      'title',
    ]),
    policy: writePolicy(),
    label: 'Create a Deck stack',
    summary: 'Add a column to a board',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const title = stackTitle(args, true) ?? '';
      const position = optionalInteger(args, 'position', 0, 1000);
      const board = await openBoard(env, args['boardId']);
      requireManage(board, 'adding a stack');
      const stacks = ordered(board, await deckApi(env).stacks(board.id));
      const at = position === undefined ? stacks.length : Math.min(position, stacks.length);
      return {
        args: { boardId: board.id, title, position: at },
        binding: { boardId: board.id },
        description: `add the stack "${title}" to the board ${describeBoard(board)} at place ${at} (0 = first) of ${stacks.length + 1}`,
        confirmReason: null,
        risk: boardRisk(board, env),
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const board = await openBoard(env, action.binding['boardId']);
      requireManage(board, 'adding a stack');
      const api = deckApi(env);
      const stacks = ordered(board, await api.stacks(board.id));
      const at = Math.min(Number(action.args['position'] ?? stacks.length), stacks.length);
      const last = stacks.length > 0 ? Math.max(...stacks.map((s) => s.order)) + 1 : 0;
      const created = await api.createStack(board.id, String(action.args['title']), at === stacks.length ? Math.max(last, stacks.length) : at);
      if (at < stacks.length) await renumber(env, board, place([...stacks, created], created, at), new Map());
      const now = ordered(board, await api.stacks(board.id));
      return jsonResult({
        created: { id: created.id, title: created.title, board: board.id, position: now.findIndex((s) => s.id === created.id) },
        stacks: now.map((s) => ({ id: s.id, title: s.title })),
      });
    }),
};

export const deckUpdateStack: FirstPartyTool = {
  family: 'deck',
  risk: 'by-visibility',
  taints: false,
  available,
  definition: {
    name: 'deck_update_stack',
    description: 'Renames a stack (column) of a Deck board and/or moves it to another place on the same board. Needs the right to manage the board.',
    schema: objectSchema(
      {
        boardId: BOARD_ID,
        stackId: STACK_ID,
        title: { type: 'string', description: 'New title.' },
        position: { type: 'integer', description: 'New place from the left, 0 = first.' },
      },
      ['boardId', 'stackId'],
    ),
    policy: writePolicy(),
    label: 'Rename or move a Deck stack',
    summary: 'Rename or reorder a column',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const title = stackTitle(args, false);
      const position = optionalInteger(args, 'position', 0, 1000);
      if (title === undefined && position === undefined) throw new InvalidArgumentError('nothing to change: give a title or a position');
      const board = await openBoard(env, args['boardId']);
      requireManage(board, 'changing a stack');
      const stack = await findStack(env, board, args['stackId']);
      const stacks = ordered(board, await deckApi(env).stacks(board.id));
      const from = stacks.findIndex((s) => s.id === stack.id);
      const to = position === undefined ? from : Math.min(position, stacks.length - 1);
      const changes = [
        ...(title !== undefined && title !== stack.title ? [`rename it to "${title}"`] : []),
        ...(to !== from ? [`move it from place ${from} to place ${to} (0 = first)`] : []),
      ];
      if (changes.length === 0) return errorResult(`ERROR: Stack ${stack.id} already looks like that; nothing to change.`);
      return {
        args: { boardId: board.id, stackId: stack.id, title: title ?? stack.title, position: to },
        binding: { ...stackState(board, stack), sequence: sequence(stacks) },
        description: `change the stack "${stack.title}" (${stack.id}) of the board ${describeBoard(board)}: ${changes.join('; ')}`,
        confirmReason: null,
        risk: boardRisk(board, env),
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const board = await openBoard(env, action.binding['boardId']);
      requireManage(board, 'changing a stack');
      const stack = await findStack(env, board, action.binding['stackId']);
      const stacks = ordered(board, await deckApi(env).stacks(board.id));
      if (!sameState(action.binding, { ...stackState(board, stack), sequence: sequence(stacks) }))
        return errorResult(
          `ERROR: The stacks of the board ${describeBoard(board)} changed since this was prepared. Nothing was done; look at them again with deck_get_board.`,
        );
      await renumber(env, board, place(stacks, stack, Number(action.args['position'])), new Map([[stack.id, String(action.args['title'])]]));
      const now = ordered(board, await deckApi(env).stacks(board.id));
      return jsonResult({
        updated: { id: stack.id, title: String(action.args['title']), board: board.id, position: now.findIndex((s) => s.id === stack.id) },
        stacks: now.map((s) => ({ id: s.id, title: s.title })),
      });
    }),
};
