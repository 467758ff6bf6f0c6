// Where the terminal playground (`make chat`, lib/cli/chat.ts) replaces the Talk ends of the pipeline:
// a message typed in the terminal instead of one Talk confirmed, printed replies instead of posted ones.
// Everything between (router, onboarding, turns, tools as the user, confirmations) is the same.
import type { MessageSender } from '../replies/bot-sender.ts';
import type { Inbox } from '../intake/inbox.ts';
import type { MessageVerifier } from '../talk/message-verifier.ts';
import type { ReplyRecord } from '../replies/reply-log.ts';
import type { RoomFactsSource, RoomInfo } from '../talk/room-info.ts';

export interface TalkSeams {
  /** Instead of Talk's confirmation of a delivered message (S3): the terminal's own line. */
  verifier?: Pick<MessageVerifier, 'verify'>;
  /** Instead of the signed post to Talk: replies and confirmation requests alike. */
  sender?: MessageSender;
  /** Instead of the durable handled-message record. */
  handled?: Pick<Inbox, 'markHandled'>;
  /** Instead of the durable reply log. */
  replyLog?: ReplyRecord;
  /** Room facts: the terminal's own room, then Talk's rooms. */
  rooms?: (talk: RoomInfo) => RoomFactsSource;
  /** S10: every turn is a reviewer's test (no agent profile; writes are dry runs). */
  reviewMode?: boolean;
}
