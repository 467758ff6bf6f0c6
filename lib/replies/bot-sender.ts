import type { Logger } from '../log/logger.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudError, NextcloudNetworkError, NextcloudServerError, NextcloudTimeoutError } from '../nextcloud/errors.ts';
import { postBotReaction } from '../nextcloud/talk-reactions.ts';
import { postBotMessage, type BotMessageBody } from '../nextcloud/talk.ts';
import { signBotMessage } from '../talk/bot-signature.ts';
import type { TalkIdentities } from '../talk/talk-identities.ts';

export interface BotMessage {
  message: string;
  replyTo: number | null;
  referenceId: string;
  silent?: boolean;
}

export class BotSendError extends Error {
  override name = 'BotSendError';
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

// Talk's bot endpoint has no rate limit of its own: its 429 is brute-force throttling after
// refused signatures (401), which retrying within seconds only prolongs.
function retryable(err: unknown): boolean {
  return err instanceof NextcloudServerError || err instanceof NextcloudTimeoutError || err instanceof NextcloudNetworkError;
}

/** Where a reply's messages go: Talk (BotSender), or the terminal playground's printer. */
export type MessageSender = Pick<BotSender, 'send' | 'react'>;

/**
 * Posts signed bot messages (HMAC-SHA256 over random + message text with the
 * secret AppAPI issued for the identity). 5xx and timeouts are retried with
 * backoff; 4xx, including 429, are final.
 */
export class BotSender {
  readonly #nextcloud: NextcloudClient;
  readonly #identities: TalkIdentities;
  readonly #logger: Logger;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #backoffMs: number[];

  constructor(deps: { nextcloud: NextcloudClient; identities: TalkIdentities; logger: Logger; sleep?: (ms: number) => Promise<void>; backoffMs?: number[] }) {
    this.#nextcloud = deps.nextcloud;
    this.#identities = deps.identities;
    this.#logger = deps.logger;
    this.#sleep = deps.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.#backoffMs = deps.backoffMs ?? [500, 1500, 4000];
  }

  async send(route: string, roomToken: string, msg: BotMessage): Promise<void> {
    const secret = await this.#identities.secret(route);
    if (!secret) throw new BotSendError('the Talk bot is not registered', 0);
    const body: BotMessageBody = { message: msg.message, referenceId: msg.referenceId };
    if (msg.replyTo !== null && msg.replyTo > 0) body.replyTo = msg.replyTo;
    if (msg.silent) body.silent = true;
    for (let attempt = 0; ; attempt++) {
      // A fresh random per attempt; the signature covers only the message text.
      const { random, signature } = signBotMessage(secret, msg.message);
      try {
        await postBotMessage(this.#nextcloud, roomToken, body, { 'X-Nextcloud-Talk-Bot-Random': random, 'X-Nextcloud-Talk-Bot-Signature': signature });
        return;
      } catch (err) {
        const delay = this.#backoffMs[attempt];
        if (retryable(err) && delay !== undefined) {
          this.#logger.warn({ roomToken, attempt: attempt + 1, status: (err as NextcloudError).status }, 'bot message failed, retrying');
          await this.#sleep(delay);
          continue;
        }
        const status = err instanceof NextcloudError ? err.status : 0;
        throw new BotSendError(`Talk refused the bot message (HTTP ${status || 'n/a'})`, status);
      }
    }
  }

  /** The bot's reaction on a message (✅/❌ on a confirmation request); signed over the emoji. Not retried. */
  async react(route: string, roomToken: string, messageId: string, reaction: string): Promise<void> {
    const secret = await this.#identities.secret(route);
    if (!secret) throw new BotSendError('the Talk bot is not registered', 0);
    const { random, signature } = signBotMessage(secret, reaction);
    try {
      await postBotReaction(this.#nextcloud, roomToken, messageId, reaction, {
        'X-Nextcloud-Talk-Bot-Random': random,
        'X-Nextcloud-Talk-Bot-Signature': signature,
      });
    } catch (err) {
      const status = err instanceof NextcloudError ? err.status : 0;
      throw new BotSendError(`Talk refused the bot reaction (HTTP ${status || 'n/a'})`, status);
    }
  }
}
