// What a turn writes into Talk when the model fails or is limited, per language
// (l10n/talk-language.ts). LlmError codes map to texts here; an unknown code keeps the
// error's own (English) public message.
import { localized } from '../l10n/talk-language.ts';

interface TurnTexts {
  genericError: string;
  emptyAfterThinking: string;
  empty: string;
  interrupted(p: { why: string }): string;
  usageLimitNow(p: { wait: string }): string;
  usageLimitMidTurn(p: { wait: string }): string;
  /** By LlmError code; absent codes fall back to the error's public message. */
  llm: Partial<Record<string, string>>;
}

const en: TurnTexts = {
  genericError: "Sorry, I'm having trouble reaching the AI service right now. Please try again later.",
  emptyAfterThinking: '_(The AI finished thinking but produced no answer. Please try again.)_',
  empty: '_(No answer was received from the AI. Please try again.)_',
  interrupted: ({ why }) => `⚠️ The answer was interrupted. ${why}`,
  usageLimitNow: ({ wait }) => `⏳ The AI service is at its usage limit right now. Please try again in about ${wait}.`,
  usageLimitMidTurn: ({ wait }) => `⏳ The usage limit was reached while I was working on this. Please send your message again in about ${wait}.`,
  llm: {},
};

const de: TurnTexts = {
  genericError: 'Leider ist der KI-Dienst gerade nicht erreichbar. Bitte später noch einmal versuchen.',
  emptyAfterThinking: '_(Die KI hat nachgedacht, aber keine Antwort geliefert. Bitte noch einmal versuchen.)_',
  empty: '_(Von der KI kam keine Antwort. Bitte noch einmal versuchen.)_',
  interrupted: ({ why }) => `⚠️ Die Antwort wurde unterbrochen. ${why}`,
  usageLimitNow: ({ wait }) => `⏳ Der KI-Dienst hat gerade sein Nutzungslimit erreicht. Bitte in etwa ${wait} noch einmal versuchen.`,
  usageLimitMidTurn: ({ wait }) => `⏳ Während der Bearbeitung wurde das Nutzungslimit erreicht. Bitte die Nachricht in etwa ${wait} erneut senden.`,
  llm: {
    llm_timeout: 'Der KI-Dienst hat zu lange für die Antwort gebraucht. Bitte noch einmal versuchen.',
    llm_rate_limited: 'Der KI-Dienst ist gerade ausgelastet. Bitte gleich noch einmal versuchen.',
    llm_auth: 'Der KI-Dienst hat die Anfrage abgelehnt. Bitte die Administration bitten, die KI-Einstellungen zu prüfen.',
    llm_bad_request: 'Der KI-Dienst konnte diese Anfrage nicht verarbeiten.',
    llm_unavailable: 'Der KI-Dienst ist gerade nicht verfügbar. Bitte später noch einmal versuchen.',
    llm_aborted: 'Die Anfrage wurde abgebrochen.',
    model_not_allowed: 'Dieses Modell ist nicht verfügbar. Bitte ein anderes Modell wählen oder die Administration fragen.',
    llm_not_configured: 'Der KI-Dienst ist noch nicht eingerichtet. Bitte die Administration fragen.',
  },
};

export const turnTexts = localized({ en, de });

/** An LlmError's public message in the turn's language. */
export function llmErrorText(error: { code: string; publicMessage: string }): string {
  return turnTexts().llm[error.code] ?? error.publicMessage;
}
