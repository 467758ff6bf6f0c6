// What the rows memory brings back add to a turn's taint (S6): other people's messages are
// untrusted. The bot's own earlier answers are not, by themselves: memory keeps no tool output
// (memory.ts), and the tool results of this turn taint it anew in the agent loop.
import type { TaintSource } from '../tools/confirmation-gate.ts';
import type { MemoryMessage } from './memory.ts';

export function memoryTaint(history: readonly MemoryMessage[], invokerRawId: string): TaintSource[] {
  return history.some((h) => h.role === 'user' && h.authorUid !== invokerRawId) ? ['other-participants'] : [];
}
