// Moving a Deck card within its board or to another one (labels and assignees around a cross-board
// move: deck-move.ts). A move to another board shows the card to its members and needs confirmation.
import { NextcloudError } from '../../nextcloud/errors.ts';
import { InvalidArgumentError } from '../files/user-paths.ts';
import {
  type FirstPartyTool,
  guarded,
  guardedPrepare,
  jsonResult,
  nextcloudMessage,
  objectSchema,
  optionalInteger,
  type PreparedAction,
  type ToolEnv,
} from '../first-party-tool.ts';
import { writePolicy } from '../tool-policy.ts';
import { errorResult, type ToolResult } from '../tool-provider.ts';
import { cardFields, type DeckBoard, type DeckStack, parseDeckId } from '../../nextcloud/deck.ts';
import { reorderHonoursOrder } from '../../nextcloud/deck-capability.ts';
import { crossBoardPlan, type CrossBoardPlan, describeAssignee, describePlan, placeInStack, planKey } from './deck-move.ts';
import { boardRisk, type CardOnBoard, cardState, deckApi, describeBoard, findStack, openBoard, openCard, requireEdit } from './deck-resolve.ts';
import { applyExtras, available, boundCard, CARD_ID, cardView, isLoc, NO_EXTRAS, reloadLoc } from './deck-views.ts';

function deckName(version: string | null): string {
  return version ? `Deck ${version}` : 'This Deck';
}

/** Deck before 1.16 ignores `order` in reorder: a move within one stack would report success and change nothing. */
function positionIgnored(version: string | null): ToolResult {
  const who = version ? `Deck ${version} on this Nextcloud ignores` : 'This Nextcloud did not report its Deck version, and Deck before 1.16 ignores';
  return errorResult(
    `ERROR: ${who} the position when a card is moved within its stack (fixed in Deck 1.16). Nothing was changed; moving the card to another stack works.`,
  );
}

/** What a failed move across boards had already changed on the card. */
function donePrepared(plan: CrossBoardPlan, problems: string[]): string {
  const done = [...plan.remove.map((l) => `label "${l.title}" taken off`), ...plan.drop.map((a) => `${describeAssignee(a)} unassigned`)];
  if (done.length === 0) return '';
  return ` Already done before the move: ${done.join('; ')}${problems.length > 0 ? ` (except: ${problems.join('; ')})` : ''}.`;
}

/** A move across boards: Deck's own "move card" dialog does an update whose URL names the target stack; labels and assignees are handled around it (deck-move.ts). */
async function moveAcrossBoards(
  env: ToolEnv,
  loc: CardOnBoard,
  to: { board: DeckBoard; stack: DeckStack; order: number; honoured: boolean },
  plan: CrossBoardPlan,
): Promise<string[] | ToolResult> {
  const { board, stack, card } = loc;
  const api = deckApi(env);
  // While the card is still on its board: Deck 1.13 would carry these labels over unremovably.
  const before = await applyExtras(
    env,
    { boardId: board.id, stackId: stack.id, cardId: card.id },
    { ...NO_EXTRAS, removeLabels: plan.remove.map((l) => l.id), removeAssignees: plan.drop },
  );
  try {
    await api.updateCard(to.board.id, to.stack.id, card.id, cardFields(card, { order: to.order }));
  } catch (err) {
    if (!(err instanceof NextcloudError)) throw err;
    return errorResult(
      `ERROR: Deck refused the move (${nextcloudMessage(err) || `HTTP ${err.status}`}); the card stays on the board ${describeBoard(board)}.${donePrepared(plan, before)}`,
    );
  }
  // Deck's update stores `order` as is; where reorder honours it, it also renumbers the stack.
  if (to.honoured) await api.reorderCard(to.board.id, to.stack.id, card.id, to.stack.id, to.order);
  const after = await applyExtras(env, { boardId: to.board.id, stackId: to.stack.id, cardId: card.id }, { ...NO_EXTRAS, addLabels: plan.add.map((l) => l.id) });
  return [...before, ...after];
}

/** The moved card as Deck now lists it, with the position it really has (Deck < 1.16 ignores the requested one). */
async function movedResult(env: ToolEnv, target: DeckBoard, cardId: number, order: number, version: string | null, problems: string[]): Promise<ToolResult> {
  const extra = problems.length > 0 ? { problems } : {};
  const loc = await reloadLoc(env, target.id, cardId);
  if (!loc) return jsonResult({ moved: { id: cardId }, board: target.id, ...extra });
  const { position, of } = placeInStack(loc.stack, cardId);
  const missed = position !== Math.min(order, of - 1);
  const note = missed ? `${deckName(version)} did not put the card at position ${order}; it is at position ${position} of ${of} (0 = top).` : null;
  return jsonResult({ moved: cardView(loc.card, loc.stack), board: target.id, stack: loc.stack.title, position, ...(note ? { note } : {}), ...extra });
}

export const deckMoveCard: FirstPartyTool = {
  family: 'deck',
  risk: 'by-visibility',
  taints: false,
  available,
  definition: {
    name: 'deck_move_card',
    description:
      "Moves a Deck card to another stack of its board (and position), or to a stack of another board (toBoardId). Moving to another board shows the card to that board's members and needs the user's confirmation; there the card keeps only labels whose titles the target board has, and people who cannot see that board are unassigned.",
    schema: objectSchema(
      {
        boardId: { type: 'integer', description: 'The board the card is on now.' },
        cardId: CARD_ID,
        toStackId: { type: 'integer', description: 'Target stack id (from deck_get_board of the target board).' },
        order: { type: 'integer', description: 'Position in the target stack, 0 = top. Default 0. Deck before 1.16 ignores it.' },
        toBoardId: { type: 'integer', description: 'Only to move to another board: its id.' },
      },
      ['boardId', 'cardId', 'toStackId'],
    ),
    policy: writePolicy(),
    label: 'Move a Deck card',
    summary: 'Move a card to another stack or board',
    requiresUser: true,
  },
  prepare: (args, env) =>
    guardedPrepare(async (): Promise<PreparedAction | ToolResult> => {
      const order = optionalInteger(args, 'order', 0, 100_000) ?? 0;
      const toBoardArg = args['toBoardId'] === undefined || args['toBoardId'] === null ? null : parseDeckId(args['toBoardId'], 'toBoardId');
      const toStackArg = parseDeckId(args['toStackId'], 'toStackId');
      const loc = await openCard(env, args);
      requireEdit(loc.board);
      if (loc.card.archived) throw new InvalidArgumentError(`card ${loc.card.id} is archived; unarchive it first`);
      const crossing = toBoardArg !== null && toBoardArg !== loc.board.id;
      // Both boards are checked against the scope: openBoard does it for the target too.
      const target = crossing ? await openBoard(env, toBoardArg, 'toBoardId') : loc.board;
      requireEdit(target);
      const toStack = await findStack(env, target, toStackArg, 'toStackId');
      const sameStack = !crossing && toStack.id === loc.stack.id;
      if (sameStack && order === loc.card.order) return errorResult(`ERROR: Card ${loc.card.id} is already there.`);
      const version = await deckApi(env).version();
      const honoured = reorderHonoursOrder(version);
      if (sameStack && !honoured) return positionIgnored(version);
      const moveArgs = { boardId: loc.board.id, cardId: loc.card.id, toBoardId: target.id, toStackId: toStack.id, order };
      const card = `the card "${loc.card.title}" (${loc.card.id})`;
      if (!crossing) {
        const where = honoured ? `at position ${order}` : `(${deckName(version)} ignores positions: the card keeps its place by its current order)`;
        return {
          args: moveArgs,
          binding: cardState(loc),
          description: `move ${card} to the stack "${toStack.title}" ${where} on the board ${describeBoard(loc.board)}`,
          confirmReason: null,
          risk: boardRisk(loc.board, env),
        };
      }
      const plan = crossBoardPlan(loc.card, target);
      return {
        args: { ...moveArgs, plan: planKey(plan) },
        binding: cardState(loc),
        description: `move ${card} from the board ${describeBoard(loc.board)} to the stack "${toStack.title}" of the board ${describeBoard(target)}, whose members will see it${describePlan(plan)}`,
        confirmReason: 'moving a card to another board, whose members will see it',
        risk: boardRisk(loc.board, env),
      };
    }),
  execute: (action, env) =>
    guarded(async () => {
      const loc = await boundCard(env, action);
      if (!isLoc(loc)) return loc;
      const { board, stack, card } = loc;
      const a = action.args;
      const crossing = a['toBoardId'] !== board.id;
      const target = crossing ? await openBoard(env, a['toBoardId'], 'toBoardId') : board;
      requireEdit(board);
      requireEdit(target);
      const toStack = await findStack(env, target, a['toStackId'], 'toStackId');
      const order = Number(a['order'] ?? 0);
      const version = await deckApi(env).version();
      const honoured = reorderHonoursOrder(version);
      if (!crossing) {
        if (toStack.id === stack.id && !honoured) return positionIgnored(version);
        await deckApi(env).reorderCard(board.id, stack.id, card.id, toStack.id, order);
        return movedResult(env, target, card.id, order, version, []);
      }
      const plan = crossBoardPlan(card, target);
      if (planKey(plan) !== a['plan'])
        return errorResult(
          `ERROR: The labels or members of the board ${describeBoard(target)} changed since this was prepared. Nothing was done; prepare the move again.`,
        );
      const moved = await moveAcrossBoards(env, loc, { board: target, stack: toStack, order, honoured }, plan);
      return Array.isArray(moved) ? movedResult(env, target, card.id, order, version, moved) : moved;
    }),
};
