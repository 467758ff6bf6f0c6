// What the router and onboarding write into Talk, per language (l10n/talk-language.ts). German
// uses neutral forms (no du/Sie): Nextcloud's informal "de" and formal "de_DE" both get it.
import { localized } from '../l10n/talk-language.ts';

interface RouterTexts {
  resetHint: string;
  onboardingIntro(p: { name: string; mention: string }): string;
  chooseMode(p: { mention: string }): string;
  onlyModeratorsChooseB(p: { name: string; mention: string }): string;
  modeChosen(p: { always: boolean; mention: string }): string;
  questionsFirst: string;
  chooseAnswer: string;
  ownAnswer(p: { hint: string }): string;
  setUp(p: { name: string; always: boolean; mention: string; deferred: boolean }): string;
  mentionedWithoutQuestion(p: { mention: string }): string;
  resetOnlyModerators: string;
  noSuchBot(p: { mention: string }): string;
  botReset(p: { mention: string }): string;
  noActiveBots: string;
  chatReset: string;
  /** Why a bot may not answer this person (bot-access.ts reasons). */
  refusal(p: { mention: string; reason: string }): string;
}

const EN_RESET_HINT = 'Send `((RESET))` at any time to start over.';
const DE_RESET_HINT = 'Mit `((RESET))` lässt sich jederzeit neu beginnen.';

const en: RouterTexts = {
  resetHint: EN_RESET_HINT,
  onboardingIntro: ({ name, mention }) =>
    [
      `Hi, I'm **${name}**. How should I respond in this conversation?`,
      '',
      `**A**: only when someone mentions @${mention}`,
      '**B**: to every message in this room',
      '',
      `Reply with **A** or **B**. ${EN_RESET_HINT}`,
    ].join('\n'),
  chooseMode: ({ mention }) => `Please reply with **A** (I answer only when someone mentions @${mention}) or **B** (I answer every message in this room).`,
  onlyModeratorsChooseB: ({ name, mention }) =>
    `Only a moderator of this conversation can let **${name}** answer every message. Reply with **A** and I will answer whenever someone mentions @${mention}, or ask a moderator to choose **B**.`,
  modeChosen: ({ always, mention }) =>
    always ? 'Got it: I will answer every message in this room.' : `Got it: I will answer when someone mentions @${mention}.`,
  questionsFirst: 'A few questions first:',
  chooseAnswer: 'Please choose one of these answers:',
  ownAnswer: ({ hint }) => `Or write your own answer: ${hint}`,
  setUp: ({ name, always, mention, deferred }) =>
    `Thanks, **${name}** is set up. ${always ? 'I will answer every message in this conversation.' : `Mention @${mention} whenever you need me.`} ${EN_RESET_HINT}${deferred ? ' Now to your first message.' : ''}`,
  mentionedWithoutQuestion: ({ mention }) => `Yes? Write your question after @${mention}.`,
  resetOnlyModerators: 'Only moderators of this conversation can reset a bot here. Ask a moderator to send ((RESET)).',
  noSuchBot: ({ mention }) => `There is no bot called @${mention}.`,
  botReset: ({ mention }) => `Chat with **@${mention}** has been reset. Mention the bot again to start fresh.`,
  noActiveBots: 'No active bots found in this chat. Mention a bot to activate it.',
  chatReset: 'Chat has been reset. Mention a bot to start fresh.',
  refusal: ({ mention, reason }) => {
    if (reason === 'guest-not-allowed') return `Sorry, @${mention} is not available to guests.`;
    if (reason === 'inactive') return `Sorry, @${mention} is currently switched off.`;
    if (reason === 'owner-unavailable')
      return `Sorry, @${mention} is not available: the account that owns it is disabled or deleted. An administrator can help.`;
    return `Sorry, you don't have access to @${mention}. Ask its owner or an administrator to share it with you.`;
  },
};

const de: RouterTexts = {
  resetHint: DE_RESET_HINT,
  onboardingIntro: ({ name, mention }) =>
    [
      `Hallo, hier ist **${name}**. Wann soll ich in dieser Unterhaltung antworten?`,
      '',
      `**A**: nur, wenn jemand @${mention} erwähnt`,
      '**B**: auf jede Nachricht in diesem Raum',
      '',
      `Bitte mit **A** oder **B** antworten. ${DE_RESET_HINT}`,
    ].join('\n'),
  chooseMode: ({ mention }) =>
    `Bitte mit **A** (Antwort nur, wenn jemand @${mention} erwähnt) oder **B** (Antwort auf jede Nachricht in diesem Raum) antworten.`,
  onlyModeratorsChooseB: ({ name, mention }) =>
    `Nur Moderatorinnen und Moderatoren dieser Unterhaltung können **${name}** auf jede Nachricht antworten lassen. Mit **A** antworte ich, sobald jemand @${mention} erwähnt; für **B** bitte die Moderation fragen.`,
  modeChosen: ({ always, mention }) =>
    always ? 'Alles klar: Ich antworte auf jede Nachricht in diesem Raum.' : `Alles klar: Ich antworte, wenn jemand @${mention} erwähnt.`,
  questionsFirst: 'Zuerst ein paar Fragen:',
  chooseAnswer: 'Bitte eine dieser Antworten wählen:',
  ownAnswer: ({ hint }) => `Oder eine eigene Antwort schreiben: ${hint}`,
  setUp: ({ name, always, mention, deferred }) =>
    `Danke, **${name}** ist eingerichtet. ${always ? 'Ich antworte auf jede Nachricht in dieser Unterhaltung.' : `Für Fragen einfach @${mention} erwähnen.`} ${DE_RESET_HINT}${deferred ? ' Jetzt zur ersten Nachricht.' : ''}`,
  mentionedWithoutQuestion: ({ mention }) => `Ja? Die Frage bitte direkt nach @${mention} schreiben.`,
  resetOnlyModerators:
    'Nur die Moderation dieser Unterhaltung kann hier einen Bot zurücksetzen. Bitte eine Moderatorin oder einen Moderator bitten, ((RESET)) zu senden.',
  noSuchBot: ({ mention }) => `Es gibt keinen Bot namens @${mention}.`,
  botReset: ({ mention }) => `Der Chat mit **@${mention}** wurde zurückgesetzt. Für einen Neuanfang den Bot einfach wieder erwähnen.`,
  noActiveBots: 'In diesem Chat ist kein Bot aktiv. Einen Bot erwähnen, um ihn zu aktivieren.',
  chatReset: 'Der Chat wurde zurückgesetzt. Für einen Neuanfang einen Bot erwähnen.',
  refusal: ({ mention, reason }) => {
    if (reason === 'guest-not-allowed') return `Leider steht @${mention} Gästen nicht zur Verfügung.`;
    if (reason === 'inactive') return `Leider ist @${mention} gerade ausgeschaltet.`;
    if (reason === 'owner-unavailable')
      return `Leider ist @${mention} nicht verfügbar: Das Konto, dem der Bot gehört, ist deaktiviert oder gelöscht. Die Administration kann helfen.`;
    return `Leider besteht kein Zugriff auf @${mention}. Die Person, der der Bot gehört, oder die Administration kann ihn freigeben.`;
  },
};

export const routerTexts = localized({ en, de });
