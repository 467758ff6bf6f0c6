// What the Talk pipeline itself writes into a room, per language (l10n/talk-language.ts).
import { localized } from '../l10n/talk-language.ts';
import { THINKING_PLACEHOLDER } from '../llm/think-filter.ts';

export const STALE_REPLY = 'Sorry, this took too long to process. Please send your message again if you still need an answer.';

export const talkTexts = localized({
  en: { staleReply: STALE_REPLY, thinking: THINKING_PLACEHOLDER },
  de: {
    staleReply: 'Leider hat die Bearbeitung zu lange gedauert. Falls die Antwort noch gebraucht wird, die Nachricht bitte erneut senden.',
    thinking: '🤔 _(denke nach … das kann einen Moment dauern)_',
  },
});
