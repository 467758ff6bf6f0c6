// The contract between tools that ask for a confirmation and the service that keeps the request (S7):
// what a confirmable action is and who runs it once confirmed. confirmations/ implements it.
import type { ActingUser } from '../nextcloud/identity.ts';
import type { ToolResult } from './tool-provider.ts';

/** What a confirmable action is: the same fields while proposed and once stored. */
interface ActionCore {
  providerId: string;
  tool: string;
  args: Record<string, unknown>;
  binding: Record<string, unknown>;
  description: string;
}

export interface ProposedAction extends ActionCore {
  /** Values that must never wait in storage as plain text; sealed with `sealer` until the action runs. */
  secrets?: Record<string, string>;
  /** Why it needs confirmation, e.g. "deleting a file". */
  reason: string;
  /** How the call ran (mode, agent profile id, scope); the action runs the same way once confirmed. */
  execution?: Record<string, unknown>;
}

export interface StoredAction extends ActionCore {
  id: string;
  userUid: string;
  botId: string;
  roomToken: string;
  /** Unsealed only for the executor, while the confirmed action runs; absent otherwise. */
  secrets?: Record<string, string>;
  hash: string;
  createdAt: number;
  expiresAt: number;
  /** How the call was requested (mode, agent profile id, scope); null for user-mode actions of older versions. */
  execution?: Record<string, unknown> | null;
}

/** Implemented by tool providers whose actions can wait for a confirmation. */
export interface ConfirmationExecutor {
  readonly id: string;
  /** Runs exactly the stored action as `user`, after checking the object's state again. */
  executeConfirmed(action: StoredAction, user: ActingUser): Promise<ToolResult>;
}

export interface NotificationPayload {
  params: {
    object: string;
    object_id: string;
    subject_type: string;
    subject_params: {
      rich_subject: string;
      rich_subject_params: Record<string, { type: string; id: string; name: string }>;
      rich_message: string;
      rich_message_params: Record<string, { type: string; id: string; name: string }>;
      link?: string;
    };
  };
}

export interface RequestedConfirmation {
  id: string;
  code: string;
  expiresAt: number;
  /** The text the server posts in the room (never the model). */
  text: string;
  /** For the user alone, outside one-to-one rooms (moderators can edit bot messages, S7). */
  notification: NotificationPayload | null;
  /** Ids of the user's older pending actions in this room with this bot, now cancelled. */
  superseded: string[];
  /** The referenceId the request is posted with, to find its Talk message id later (reactions, issue 23). */
  referenceId: string;
}
