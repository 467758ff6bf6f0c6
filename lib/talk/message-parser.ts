// Turns a validated Talk webhook event or a chat-API message into one shape.
// Everything in the result is user data: rendered text and names are never trusted.
import { z } from 'zod';
import { MAX_MESSAGE_LENGTH, RoomTokenSchema, TalkParametersSchema, type TalkParameter, type TalkWebhookEvent } from './webhook-schema.ts';

export type { TalkParameter } from './webhook-schema.ts';

export type ActorKind = 'user' | 'guest' | 'federated' | 'bot' | 'email' | 'other';

export interface TalkActor {
  kind: ActorKind;
  /** uid for users, else the part after the actor type */
  id: string;
  /** e.g. users/alice */
  rawId: string;
  displayName: string;
}

export type AttachmentKind = 'image' | 'audio' | 'document' | 'unsupported';

export interface Attachment {
  fileId: string;
  name: string;
  mimeType: string;
  size: number;
  /** relative to the sender's home; address files by fileId, never by path (S15) */
  path: string;
  etag?: string;
  permissions?: number;
  kind: AttachmentKind;
}

export type MessageKind = 'chat' | 'file-share' | 'system';

export interface ParsedMessage {
  messageId: string;
  roomToken: string;
  actor: TalkActor;
  /** message with placeholders, exactly as Talk has it */
  rawText: string;
  /** placeholders rendered; user data */
  text: string;
  parameters: Record<string, TalkParameter>;
  attachments: Attachment[];
  replyToId: string | null;
  threadId: string | null;
  referenceId: string | null;
  edited: boolean;
  kind: MessageKind;
  systemName: string | null;
}

export const MAX_RENDERED_TEXT_LENGTH = MAX_MESSAGE_LENGTH;
const MAX_RENDERED_NAME = 256;
const MAX_LABEL_NAME = 100;

const ACTOR_KINDS: ReadonlyMap<string, ActorKind> = new Map([
  ['users', 'user'],
  ['guests', 'guest'],
  ['federated_users', 'federated'],
  ['bots', 'bot'],
  ['emails', 'email'],
]);

export function normalizeActor(rawId: string, displayName: string): TalkActor {
  const slash = rawId.indexOf('/');
  if (slash <= 0 || slash === rawId.length - 1) return { kind: 'other', id: rawId, rawId, displayName };
  return { kind: ACTOR_KINDS.get(rawId.slice(0, slash)) ?? 'other', id: rawId.slice(slash + 1), rawId, displayName };
}

// Cut at a code point boundary so a surrogate pair is never split.
function truncate(s: string, max: number, ellipsis: string): string {
  if (s.length <= max) return s;
  let end = max - ellipsis.length;
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return s.slice(0, end) + ellipsis;
}

// Names are shown inline: no line breaks or control characters that could fake a new line.
function cleanName(name: string, max: number): string {
  const flat = name
    .replace(/[\p{Cc}\p{Zl}\p{Zp}]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return truncate(flat, max, '…');
}

/** `Name (uid)`, so nobody passes for someone else by display name (S5). */
export function renderPersonLabel(displayName: string, uid: string): string {
  const id = cleanName(uid, MAX_LABEL_NAME);
  const name = cleanName(displayName, MAX_LABEL_NAME);
  if (name === '' || name === id) return id;
  return `${name} (${id})`;
}

const PLACEHOLDER = /\{([A-Za-z0-9][A-Za-z0-9_-]{0,63})\}/g;

/**
 * {mention-…} → '@Name', other known placeholders ({file}, {actor}, …) → their name,
 * unknown placeholders stay as they are. Single pass: rendered names are never re-expanded.
 */
export function renderMessageText(message: string, parameters: Readonly<Record<string, { name: string; id?: string }>>): string {
  const rendered = message.replace(PLACEHOLDER, (whole: string, key: string) => {
    if (!Object.hasOwn(parameters, key)) return whole;
    const param = parameters[key];
    if (param === undefined) return whole;
    const label = cleanName(param.name, MAX_RENDERED_NAME) || cleanName(param.id ?? '', MAX_RENDERED_NAME);
    return key.startsWith('mention-') ? `@${label}` : label;
  });
  return truncate(rendered, MAX_RENDERED_TEXT_LENGTH, '…');
}

const EXTENSION_KINDS: ReadonlyMap<string, AttachmentKind> = new Map([
  ...['png', 'jpg', 'jpeg', 'gif', 'webp', 'bmp', 'heic', 'heif', 'tif', 'tiff'].map((e) => [e, 'image'] as const),
  ...['mp3', 'wav', 'ogg', 'oga', 'opus', 'm4a', 'aac', 'flac', 'weba'].map((e) => [e, 'audio'] as const),
  ...['mp4', 'm4v', 'mov', 'mkv', 'avi', 'webm', 'wmv', '3gp'].map((e) => [e, 'unsupported'] as const),
]);

export function classifyAttachment(mimeType: string, name: string): AttachmentKind {
  const mime = (mimeType.split(';')[0] ?? '').trim().toLowerCase();
  // SVG is XML that can carry scripts; vision models do not take it.
  if (mime === 'image/svg+xml') return 'document';
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('audio/')) return 'audio';
  if (mime.startsWith('video/')) return 'unsupported';
  if (mime === '' || mime === 'application/octet-stream') {
    const dot = name.lastIndexOf('.');
    const ext = dot >= 0 ? name.slice(dot + 1).toLowerCase() : '';
    return EXTENSION_KINDS.get(ext) ?? 'document';
  }
  return 'document';
}

function extractAttachments(parameters: Readonly<Record<string, TalkParameter>>): Attachment[] {
  const out: Attachment[] = [];
  const seen = new Set<string>();
  for (const p of Object.values(parameters)) {
    if (p.type !== 'file' || seen.has(p.id)) continue;
    seen.add(p.id);
    const mimeType = p.mimetype ?? '';
    const attachment: Attachment = { fileId: p.id, name: p.name, mimeType, size: p.size ?? 0, path: p.path ?? '', kind: classifyAttachment(mimeType, p.name) };
    if (p.etag !== undefined) attachment.etag = p.etag;
    if (p.permissions !== undefined) attachment.permissions = p.permissions;
    out.push(attachment);
  }
  return out;
}

// Talk 19 sends file shares as Activity named '' (voice messages: 'file_shared'); Talk 23+ names them 'message'.
const FILE_SHARE_ACTIVITY_NAMES: ReadonlySet<string> = new Set(['', 'file_shared', 'message']);

/**
 * Create and file-share Activities → chat / file-share; other Activities → system;
 * Join, Leave, Like and Undo → null. Room type never comes from here (target.name lies, S5).
 */
export function parseWebhookMessage(event: TalkWebhookEvent): ParsedMessage | null {
  if (event.type !== 'Create' && event.type !== 'Activity') return null;
  const { message, parameters } = event.object.content;
  const files = extractAttachments(parameters);
  let kind: MessageKind;
  if (event.type === 'Create') kind = files.length > 0 ? 'file-share' : 'chat';
  else kind = FILE_SHARE_ACTIVITY_NAMES.has(event.object.name) && files.length > 0 ? 'file-share' : 'system';
  return {
    messageId: event.object.id,
    roomToken: event.target.id,
    actor: normalizeActor(event.actor.id, event.actor.name),
    rawText: message,
    text: renderMessageText(message, parameters),
    parameters,
    attachments: kind === 'system' ? [] : files,
    // Talk 21+ only; Talk 19 sends no parent.
    replyToId: event.type === 'Create' ? (event.object.inReplyTo?.object.id ?? null) : null,
    // The bot payload carries no thread id; take it from Talk's own copy of the message.
    threadId: null,
    referenceId: null,
    // Edits arrive as a separate `message_edited` Activity.
    edited: false,
    kind,
    systemName: kind === 'system' ? event.object.name : null,
  };
}

const PositiveId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** A message as Talk's chat API returns it (GET /chat/{token}, context, parent). Unknown keys are dropped. */
export const TalkChatMessageSchema = z.object({
  id: PositiveId,
  token: RoomTokenSchema,
  actorType: z.string().regex(/^[a-z_]{1,32}$/),
  actorId: z
    .string()
    .min(1)
    .max(512)
    .regex(/^[^\u0000-\u001f\u007f]+$/),
  actorDisplayName: z.string().max(1024),
  timestamp: z.number().int().nonnegative().optional(),
  message: z.string().max(MAX_MESSAGE_LENGTH),
  messageParameters: TalkParametersSchema,
  systemMessage: z.string().max(128),
  messageType: z.string().max(64),
  referenceId: z.string().max(256).optional(),
  parent: z.object({ id: PositiveId }).optional(),
  lastEditTimestamp: z.number().int().nonnegative().optional(),
  silent: z.boolean().optional(),
  threadId: z.number().int().nonnegative().optional(),
  isThread: z.boolean().optional(),
});

export type TalkChatMessage = z.output<typeof TalkChatMessageSchema>;

// Message types that carry what a person wrote or shared; the rest (system, comment_deleted, command) are events.
const CONTENT_MESSAGE_TYPES: ReadonlySet<string> = new Set(['comment', 'voice-message', 'record-audio', 'record-video']);

export function parseChatApiMessage(msg: unknown): ParsedMessage | null {
  const result = TalkChatMessageSchema.safeParse(msg);
  if (!result.success) return null;
  const m = result.data;
  const files = extractAttachments(m.messageParameters);
  let kind: MessageKind;
  let systemName: string | null = null;
  if (m.systemMessage !== '' || !CONTENT_MESSAGE_TYPES.has(m.messageType)) {
    kind = 'system';
    systemName = m.systemMessage !== '' ? m.systemMessage : m.messageType;
  } else {
    kind = files.length > 0 ? 'file-share' : 'chat';
  }
  return {
    messageId: String(m.id),
    roomToken: m.token,
    actor: normalizeActor(`${m.actorType}/${m.actorId}`, m.actorDisplayName),
    rawText: m.message,
    text: renderMessageText(m.message, m.messageParameters),
    parameters: m.messageParameters,
    attachments: kind === 'system' ? [] : files,
    replyToId: m.parent ? String(m.parent.id) : null,
    // Talk 22 sets threadId on every message (its own id, or its reply chain's root) and adds
    // isThread: true only when that root is a real thread (Message::toArray); it is never false.
    threadId: m.threadId !== undefined && m.threadId > 0 && m.isThread === true ? String(m.threadId) : null,
    // Talk answers '' when no referenceId was set.
    referenceId: m.referenceId ? m.referenceId : null,
    edited: m.lastEditTimestamp !== undefined && m.lastEditTimestamp > 0,
    kind,
    systemName,
  };
}
