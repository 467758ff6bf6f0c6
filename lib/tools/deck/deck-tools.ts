// Deck as the invoking user: boards, stacks, cards, labels and comments, one file each. Every
// call first resolves the board it touches and checks it against the assignment's scope; cards,
// stacks, labels and comments are then looked up on that board as the server lists them
// (deck-resolve.ts). Deletions, moves to another board and assigning or mentioning other people
// (they are notified) always need the user's confirmation. Deck content is written by others,
// so reads taint the turn (S6).
import type { FirstPartyTool } from '../first-party-tool.ts';
import { deckArchiveBoard, deckCreateBoard, deckGetBoard, deckListBoards, deckUpdateBoard } from './deck-boards.ts';
import { deckMoveCard } from './deck-card-move.ts';
import { deckArchiveCard, deckCreateCard, deckDeleteCard, deckListCards, deckUpdateCard } from './deck-cards.ts';
import { deckAddComment, deckDeleteComment, deckListComments, deckUpdateComment } from './deck-comments.ts';
import { deckCreateLabel, deckDeleteLabel, deckUpdateLabel } from './deck-labels.ts';
import { deckCreateStack, deckDeleteStack, deckUpdateStack } from './deck-stacks.ts';

export const DECK_TOOLS: readonly FirstPartyTool[] = [
  deckListBoards,
  deckGetBoard,
  deckCreateBoard,
  deckUpdateBoard,
  deckArchiveBoard,
  deckCreateStack,
  deckUpdateStack,
  deckDeleteStack,
  deckListCards,
  deckCreateCard,
  deckUpdateCard,
  deckMoveCard,
  deckArchiveCard,
  deckDeleteCard,
  deckCreateLabel,
  deckUpdateLabel,
  deckDeleteLabel,
  deckListComments,
  deckAddComment,
  deckUpdateComment,
  deckDeleteComment,
];
