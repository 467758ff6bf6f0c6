// What moving a card does beyond changing its stack. Across boards, Deck 1.13 (Nextcloud 29)
// keeps the old board's labels, which the new board can neither show nor remove (Deck issue
// #2749); later Deck swaps them for same-titled ones or silently drops them. No version
// touches assignments, so people who cannot see the new board stay assigned. So on every
// version the move takes the labels off while the card is still on its old board, puts on the
// new board's labels of the same title afterwards, and first unassigns whoever cannot see the
// new board; the confirmation names what is lost.
import { ASSIGN_GROUP, ASSIGN_USER, type DeckAssignee, type DeckBoard, type DeckCard, type DeckLabel, type DeckStack } from '../../nextcloud/deck.ts';
import { reachesBoard } from './deck-resolve.ts';

export interface CrossBoardPlan {
  /** The card's labels: all taken off before the move. */
  remove: DeckLabel[];
  /** The target board's labels with the same titles: put on after the move. */
  add: DeckLabel[];
  /** Labels the target board has no same-titled label for. */
  lost: DeckLabel[];
  /** Assignees who cannot see the target board: unassigned before the move. */
  drop: DeckAssignee[];
}

export function crossBoardPlan(card: DeckCard, target: DeckBoard): CrossBoardPlan {
  const add: DeckLabel[] = [];
  const lost: DeckLabel[] = [];
  for (const label of card.labels) {
    // Same rule as Deck's own board change (CardService::update): the exact title.
    const same = target.labels.find((l) => l.title === label.title);
    if (!same) lost.push(label);
    else if (!add.some((l) => l.id === same.id)) add.push(same);
  }
  return { remove: [...card.labels], add, lost, drop: card.assignees.filter((a) => !reachesBoard(target, a)) };
}

/** The part of a plan the user confirms; compared again when the move runs, as the target board may change meanwhile. */
export function planKey(plan: CrossBoardPlan): string {
  return JSON.stringify({
    add: plan.add.map((l) => l.id).sort((a, b) => a - b),
    lost: plan.lost.map((l) => l.title).sort(),
    drop: plan.drop.map((a) => `${a.type}:${a.participant}`).sort(),
  });
}

export function describeAssignee(a: DeckAssignee): string {
  if (a.type === ASSIGN_USER) return `${a.displayName} (${a.participant})`;
  return `the ${a.type === ASSIGN_GROUP ? 'group' : 'team'} "${a.displayName}" (${a.participant})`;
}

/** Confirmation text for what the card loses on the target board ('' when nothing). */
export function describePlan(plan: CrossBoardPlan): string {
  const parts: string[] = [];
  if (plan.lost.length > 0) {
    const titles = plan.lost.map((l) => `"${l.title}"`).join(', ');
    parts.push(`the target board has no label ${titles}, so the card loses ${plan.lost.length === 1 ? 'that label' : 'those labels'}`);
  }
  if (plan.drop.length > 0) parts.push(`${plan.drop.map(describeAssignee).join(', ')} cannot see the target board and will be unassigned`);
  return parts.map((p) => `; ${p}`).join('');
}

/** A card's place in its stack as Deck lists it (0 = top), and how many cards the stack has. */
export function placeInStack(stack: DeckStack, cardId: number): { position: number; of: number } {
  const cards = [...stack.cards].sort((a, b) => a.order - b.order);
  return { position: cards.findIndex((c) => c.id === cardId), of: cards.length };
}
