// The fixed texts of server-recorded confirmations (confirmation-service.ts) in the language of the
// turn: the request the server posts, the notification, and every answer to a reply. The German
// texts use neutral forms (no du/Sie). `description` and `reason` come from the tools in English
// and are embedded as they are; `confirm`/`cancel` are the exact replies to type (with the bot's
// mention when there is one), built by the service from `words`.
import { localized } from '../l10n/talk-language.ts';

export interface ConfirmationTexts {
  /** The reply words the texts suggest; the service falls back to yes/no when the parser does not accept them. */
  words: { yes: string; no: string };

  // The request posted in the room.
  requestTitle(p: { code: string }): string;
  requestAction(p: { mention: string | null; description: string }): string;
  requestReason(p: { reason: string }): string;
  requestHowTo(p: { uid: string; minutes: number; time: string; confirm: string; cancel: string }): string;
  requestSupersedes(): string;
  /** Issue 23: a 👍/👎 on the request answers it too. */
  requestReactions(): string;

  // The notification for the user alone.
  notificationSubject(): string;
  notificationMessage(p: { yes: string; no: string; code: string; time: string }): string;

  // Answers to a reply.
  notYours(p: { uid: string }): string;
  cancelled(p: { description: string }): string;
  noLongerPending(): string;
  missingCode(p: { yes: string }): string;
  tooManyWrongCodes(): string;
  codeMismatch(): string;
  interrupted(): string;
  alreadyUsed(): string;
  requestCancelled(): string;
  superseded(): string;
  expired(): string;
  otherRoom(): string;
  notAddressed(p: { mention: string | null }): string;

  // The outcome of a confirmed action.
  done(p: { description: string }): string;
  notDone(p: { description: string; detail: string }): string;
  integrityFailed(): string;
  noLongerAllowed(p: { reason: string }): string;
  toolUnavailable(): string;
  secretUnreadable(): string;
  actionFailed(): string;
}

const en: ConfirmationTexts = {
  words: { yes: 'yes', no: 'no' },

  requestTitle: ({ code }) => `🔐 **Confirmation needed** (code ${code})`,
  requestAction: ({ mention, description }) => `${mention !== null ? `@${mention}` : 'The bot'} was asked to ${description}.`,
  requestReason: ({ reason }) => `This needs your confirmation because it means ${reason}.`,
  requestHowTo: ({ uid, minutes, time, confirm, cancel }) =>
    `Only ${uid} can confirm it, in this conversation, within ${minutes} minutes (until ${time} UTC): answer \`${confirm}\` to go ahead, or \`${cancel}\` to cancel.`,
  requestSupersedes: () => 'Your previous pending request in this conversation is cancelled.',
  requestReactions: () => 'You can also react 👍 to this message to go ahead, or 👎 to cancel.',

  notificationSubject: () => 'Confirmation needed: {action}',
  notificationMessage: ({ yes, no, code, time }) =>
    `To go ahead, answer "${yes} ${code}" to the bot in the conversation before ${time} UTC. If you did not ask for this, answer "${no}".`,

  notYours: ({ uid }) => `This confirmation belongs to ${uid}; only they can confirm it. Nothing was done.`,
  cancelled: ({ description }) => `Cancelled. Nothing was done: ${description}.`,
  noLongerPending: () => 'That request is no longer pending.',
  missingCode: ({ yes }) => `Nothing was done yet: to confirm, answer with "${yes}" and the code from the confirmation request, for example \`${yes} 1234\`.`,
  tooManyWrongCodes: () => 'That code is wrong too often; the request is cancelled and nothing was done. Ask again if you still want it.',
  codeMismatch: () => 'That code does not match your pending request. Nothing was done; check the code in the confirmation request.',
  interrupted: () =>
    'This confirmation was being carried out when the service restarted. It is not repeated; please check whether it happened before asking again.',
  alreadyUsed: () => 'That confirmation was already used; it runs only once.',
  requestCancelled: () => 'That request was cancelled; nothing was done. Ask again if you still want it.',
  superseded: () => 'That request was replaced by a newer one; only the latest request can be confirmed.',
  expired: () => 'That confirmation expired; nothing was done. Ask again if you still want it.',
  otherRoom: () => 'That confirmation was requested in another conversation; answer there. Nothing was done here.',
  notAddressed: ({ mention }) => `Nothing was done: this confirmation is for ${mention !== null ? `@${mention}` : 'another bot'}; answer that bot.`,

  done: ({ description }) => `✅ Done: ${description}.`,
  notDone: ({ description, detail }) => `Not done: ${description}.\n${detail}`,
  integrityFailed: () => 'The stored action failed its integrity check.',
  noLongerAllowed: ({ reason }) => `You are no longer allowed to do this: ${reason}`,
  toolUnavailable: () => 'The tool that prepared this action is not available any more.',
  secretUnreadable: () => 'A secret this action needs could not be read; nothing was done.',
  actionFailed: () => 'The action failed.',
};

const de: ConfirmationTexts = {
  words: { yes: 'ja', no: 'nein' },

  requestTitle: ({ code }) => `🔐 **Bestätigung erforderlich** (Code ${code})`,
  requestAction: ({ mention, description }) => `Auftrag an ${mention !== null ? `@${mention}` : 'den Bot'}: ${description}.`,
  requestReason: ({ reason }) => `Grund für die Bestätigung: ${reason}.`,
  requestHowTo: ({ uid, minutes, time, confirm, cancel }) =>
    `Bestätigen kann nur ${uid}, in dieser Unterhaltung und innerhalb von ${minutes === 1 ? '1 Minute' : `${minutes} Minuten`} (bis ${time} UTC): Zum Ausführen mit \`${confirm}\` antworten, zum Abbrechen mit \`${cancel}\`.`,
  requestSupersedes: () => 'Die vorherige offene Anfrage in dieser Unterhaltung ist damit abgebrochen.',
  requestReactions: () => 'Alternativ mit 👍 auf diese Nachricht ausführen oder mit 👎 abbrechen.',

  notificationSubject: () => 'Bestätigung erforderlich: {action}',
  notificationMessage: ({ yes, no, code, time }) =>
    `Zum Ausführen dem Bot in der Unterhaltung bis ${time} UTC mit „${yes} ${code}“ antworten. Falls das nicht angefragt wurde, mit „${no}“ antworten.`,

  notYours: ({ uid }) => `Diese Bestätigung ist für ${uid} bestimmt; nur diese Person kann sie erteilen. Es wurde nichts ausgeführt.`,
  cancelled: ({ description }) => `Abgebrochen. Nicht ausgeführt: ${description}.`,
  noLongerPending: () => 'Diese Anfrage ist nicht mehr offen.',
  missingCode: ({ yes }) =>
    `Bisher wurde nichts ausgeführt: Zum Bestätigen mit „${yes}“ und dem Code aus der Bestätigungsanfrage antworten, zum Beispiel \`${yes} 1234\`.`,
  tooManyWrongCodes: () => 'Der Code war zu oft falsch; die Anfrage ist abgebrochen und es wurde nichts ausgeführt. Bei Bedarf bitte neu anfragen.',
  codeMismatch: () => 'Dieser Code passt nicht zur offenen Anfrage. Es wurde nichts ausgeführt; bitte den Code in der Bestätigungsanfrage prüfen.',
  interrupted: () =>
    'Diese Bestätigung wurde gerade ausgeführt, als der Dienst neu gestartet wurde. Sie wird nicht wiederholt; bitte vor einer neuen Anfrage prüfen, ob die Aktion stattgefunden hat.',
  alreadyUsed: () => 'Diese Bestätigung wurde bereits verwendet; sie wird nur einmal ausgeführt.',
  requestCancelled: () => 'Diese Anfrage wurde abgebrochen; es wurde nichts ausgeführt. Bei Bedarf bitte neu anfragen.',
  superseded: () => 'Diese Anfrage wurde durch eine neuere ersetzt; nur die neueste Anfrage kann bestätigt werden.',
  expired: () => 'Diese Bestätigung ist abgelaufen; es wurde nichts ausgeführt. Bei Bedarf bitte neu anfragen.',
  otherRoom: () => 'Diese Bestätigung wurde in einer anderen Unterhaltung angefragt; bitte dort antworten. Hier wurde nichts ausgeführt.',
  notAddressed: ({ mention }) =>
    `Es wurde nichts ausgeführt: Diese Bestätigung gilt für ${mention !== null ? `@${mention}` : 'einen anderen Bot'}; bitte diesem Bot antworten.`,

  done: ({ description }) => `✅ Erledigt: ${description}.`,
  notDone: ({ description, detail }) => `Nicht ausgeführt: ${description}.\n${detail}`,
  integrityFailed: () => 'Die gespeicherte Aktion hat die Integritätsprüfung nicht bestanden.',
  noLongerAllowed: ({ reason }) => `Dafür fehlt inzwischen die Berechtigung: ${reason}`,
  toolUnavailable: () => 'Das Werkzeug, das diese Aktion vorbereitet hat, ist nicht mehr verfügbar.',
  secretUnreadable: () => 'Ein für diese Aktion benötigter geheimer Wert konnte nicht gelesen werden; es wurde nichts ausgeführt.',
  actionFailed: () => 'Die Aktion ist fehlgeschlagen.',
};

export const confirmationTexts = localized<ConfirmationTexts>({ en, de });
