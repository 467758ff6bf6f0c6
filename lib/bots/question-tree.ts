// A bot's onboarding question tree: its shape, limits and the check of a bot form's tree. Part of the
// bot's configuration (stored in `bots.onboarding_questions`); `router/onboarding.ts` walks it in a room.
import { z } from 'zod';

export interface QuestionAnswer {
  id: string;
  text: string;
  next: string | null;
  type?: 'choice' | 'free_text';
}

export interface Question {
  id: string;
  text: string;
  answers: QuestionAnswer[];
}

export interface QuestionTree {
  start: string;
  questions: Question[];
}

export const MAX_QUESTIONS = 15;
export const MAX_ANSWERS_PER_QUESTION = 5;
export const MAX_TEXT_LENGTH = 500;

const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const ID_MESSAGE = 'Use 1 to 64 letters, digits, "_" or "-"';

const idSchema = z.string({ error: 'Must be a text' }).regex(ID_PATTERN, ID_MESSAGE);
const textSchema = z.string({ error: 'Must be a text' }).trim().min(1, 'Must not be empty').max(MAX_TEXT_LENGTH, `At most ${MAX_TEXT_LENGTH} characters`);

const answerSchema = z.object({
  id: idSchema,
  text: textSchema,
  // Forms often send '' or leave it out for "ends here".
  next: z
    .string({ error: 'Must be a question id or null' })
    .nullable()
    .optional()
    .transform((v) => (v === undefined || v === '' ? null : v)),
  type: z.enum(['choice', 'free_text'], { error: 'Must be "choice" or "free_text"' }).optional(),
});

const treeSchema = z.object(
  {
    start: idSchema,
    questions: z
      .array(
        z.object(
          {
            id: idSchema,
            text: textSchema,
            answers: z
              .array(answerSchema, { error: 'Must be a list of answers' })
              .min(1, 'Needs at least one answer')
              .max(MAX_ANSWERS_PER_QUESTION, `At most ${MAX_ANSWERS_PER_QUESTION} answers`),
          },
          { error: 'Must be a question' },
        ),
        { error: 'Must be a list of questions' },
      )
      .min(1, 'Needs at least one question')
      .max(MAX_QUESTIONS, `At most ${MAX_QUESTIONS} questions`),
  },
  { error: 'Must be a question tree' },
);

export type QuestionTreeValidation = { ok: true; tree: QuestionTree } | { ok: false; errors: Record<string, string> };

/**
 * Checks a question tree from a bot form. Error keys are paths such as `start`,
 * `questions.2.id` or `questions.0.answers.1.next`; '' names the whole tree.
 */
export function validateQuestionTree(tree: unknown): QuestionTreeValidation {
  const parsed = treeSchema.safeParse(tree);
  const errors: Record<string, string> = {};
  const add = (key: string, message: string): void => {
    if (!(key in errors)) errors[key] = message;
  };
  if (!parsed.success) {
    for (const issue of parsed.error.issues) add(issue.path.map(String).join('.'), issue.message);
    return { ok: false, errors };
  }
  const value: QuestionTree = parsed.data;
  const index = new Map<string, number>();
  value.questions.forEach((q, i) => {
    if (index.has(q.id)) add(`questions.${i}.id`, `Duplicate question id "${q.id}"`);
    else index.set(q.id, i);
    const answerIds = new Set<string>();
    let freeText = 0;
    q.answers.forEach((a, j) => {
      if (answerIds.has(a.id)) add(`questions.${i}.answers.${j}.id`, `Duplicate answer id "${a.id}"`);
      answerIds.add(a.id);
      if (a.type === 'free_text' && ++freeText > 1) add(`questions.${i}.answers.${j}.type`, 'At most one free-text answer per question');
      if (a.next !== null && !ID_PATTERN.test(a.next)) add(`questions.${i}.answers.${j}.next`, ID_MESSAGE);
    });
  });
  if (!index.has(value.start)) add('start', `No question has the id "${value.start}"`);
  value.questions.forEach((q, i) => {
    q.answers.forEach((a, j) => {
      if (a.next !== null && ID_PATTERN.test(a.next) && !index.has(a.next)) {
        add(`questions.${i}.answers.${j}.next`, `No question has the id "${a.next}"`);
      }
    });
  });
  if (Object.keys(errors).length > 0) return { ok: false, errors };
  const cycle = findCycle(value, index);
  if (cycle) add(`questions.${cycle.question}.answers.${cycle.answer}.next`, `Leads back to question "${cycle.target}" (a loop)`);
  return Object.keys(errors).length > 0 ? { ok: false, errors } : { ok: true, tree: value };
}

function findCycle(tree: QuestionTree, index: Map<string, number>): { question: number; answer: number; target: string } | null {
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string): { question: number; answer: number; target: string } | null => {
    state.set(id, 'visiting');
    const i = index.get(id) ?? -1;
    const q = tree.questions[i];
    for (const [j, a] of (q?.answers ?? []).entries()) {
      if (a.next === null) continue;
      const s = state.get(a.next);
      if (s === 'visiting') return { question: i, answer: j, target: a.next };
      if (s === undefined) {
        const found = visit(a.next);
        if (found) return found;
      }
    }
    state.set(id, 'done');
    return null;
  };
  for (const q of tree.questions) {
    if (state.has(q.id)) continue;
    const found = visit(q.id);
    if (found) return found;
  }
  return null;
}
