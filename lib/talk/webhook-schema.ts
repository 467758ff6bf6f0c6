// Schemas for Talk bot webhooks as AppAPI forwards them: Talk's ActivityStreams
// payload re-encoded by AppAPI, plus its own keys (appId, route, _route).
// Unknown keys are accepted and dropped; every field we use is checked and bounded.
import { z } from 'zod';

// Talk caps a chat message at 32000 code points; in UTF-16 that is at most 64000 units.
export const MAX_MESSAGE_LENGTH = 64_000;
// object.content is JSON with \uXXXX escapes (6 chars per UTF-16 unit) plus parameters.
export const MAX_CONTENT_LENGTH = 512 * 1024;
// The whole delivery: AppAPI re-encodes Talk's JSON, escaping those backslashes again (about 7
// bytes a UTF-16 unit, ≈ 450 KB for the longest message), and Talk 21+ adds the replied-to message
// in full (`inReplyTo`). A larger body is refused with 413, which Talk never sees (AppAPI answers 200).
export const MAX_WEBHOOK_BODY_BYTES = 2 * 1024 * 1024;
const MAX_NAME_LENGTH = 1024;
const MAX_ACTOR_ID_LENGTH = 512;
const MAX_LINK_LENGTH = 4096;
const MAX_PARAMETERS = 2000;

// Positive int64 without leading zeros, so one id has one spelling (dedupe keys).
const DIGITS = /^[1-9][0-9]{0,18}$/;
const ROOM_TOKEN = /^[A-Za-z0-9]{1,64}$/;
// `<actorType>/<id>`: users/alice, guests/<sha1>, federated_users/bob@host, bots/bot-<sha1>.
const ACTOR_ID = /^[a-z_]{1,32}\/[^\u0000-\u001f\u007f]+$/;
const PARAMETER_KEY = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

const boundedString = (max: number) => z.string().max(max);

export const MessageIdSchema = z.string().regex(DIGITS, { error: 'expected a numeric string' });
export const RoomTokenSchema = z.string().regex(ROOM_TOKEN, { error: 'expected a room token' });
export const ActorIdSchema = z.string().max(MAX_ACTOR_ID_LENGTH).regex(ACTOR_ID, { error: 'expected <type>/<id>' });

// Talk usually sends numbers; accept digit strings too so a version change does not drop files.
const NonNegativeIntSchema = z.union([
  z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  z
    .string()
    .regex(/^[0-9]{1,15}$/)
    .transform(Number),
]);

// A rich-object parameter (mention, file, actor, call, ...). Only the fields we may use are kept.
export const TalkParameterSchema = z
  .object({
    type: boundedString(64).min(1),
    id: z.union([boundedString(MAX_ACTOR_ID_LENGTH), z.number().int().transform(String)]),
    name: boundedString(MAX_NAME_LENGTH),
    'mention-id': boundedString(MAX_ACTOR_ID_LENGTH).optional(),
    server: boundedString(MAX_LINK_LENGTH).optional(),
    size: NonNegativeIntSchema.optional(),
    path: boundedString(MAX_LINK_LENGTH).optional(),
    link: boundedString(MAX_LINK_LENGTH).optional(),
    etag: boundedString(256).optional(),
    permissions: NonNegativeIntSchema.optional(),
    mimetype: boundedString(256).optional(),
    'preview-available': boundedString(16).optional(),
  })
  .superRefine((p, ctx) => {
    if (p.type !== 'file') return;
    // Attachments are addressed by file id (S15), so a file must carry everything we read.
    if (!DIGITS.test(p.id)) ctx.addIssue({ code: 'custom', path: ['id'], message: 'file id must be a numeric string' });
    if (p.size === undefined) ctx.addIssue({ code: 'custom', path: ['size'], message: 'file size missing' });
    if (p.path === undefined) ctx.addIssue({ code: 'custom', path: ['path'], message: 'file path missing' });
    if (p.mimetype === undefined) ctx.addIssue({ code: 'custom', path: ['mimetype'], message: 'file mimetype missing' });
  });

// PHP encodes an empty parameter map as `[]`.
export const TalkParametersSchema = z.preprocess(
  (v) => (Array.isArray(v) && v.length === 0 ? {} : v),
  z
    .record(z.string().regex(PARAMETER_KEY, { error: 'bad parameter key' }), TalkParameterSchema)
    .refine((r) => Object.keys(r).length <= MAX_PARAMETERS, { error: 'too many parameters' }),
);

export const TalkContentSchema = z.object({ message: boundedString(MAX_MESSAGE_LENGTH), parameters: TalkParametersSchema });

// object.content is itself a JSON string.
const ContentStringSchema = boundedString(MAX_CONTENT_LENGTH)
  .transform((s, ctx) => {
    try {
      return JSON.parse(s) as unknown;
    } catch {
      ctx.issues.push({ code: 'custom', message: 'not JSON', input: s });
      return z.NEVER;
    }
  })
  .pipe(TalkContentSchema);

const PersonSchema = z.object({
  type: boundedString(64),
  id: ActorIdSchema,
  name: boundedString(MAX_NAME_LENGTH),
  talkParticipantType: z
    .string()
    .regex(/^[0-9]{1,2}$/)
    .optional(),
});

const CollectionSchema = z.object({
  type: z.literal('Collection'),
  id: RoomTokenSchema,
  // In one-to-one rooms this is a JSON list of uids; never use it to decide the room type (S5).
  name: boundedString(MAX_NAME_LENGTH),
});

const NoteBase = {
  type: z.literal('Note'),
  id: MessageIdSchema,
  name: boundedString(128),
  content: ContentStringSchema,
  mediaType: boundedString(64).optional(),
};

// Talk 21+: the quoted parent message. Only its id is used.
const InReplyToSchema = z.object({
  type: boundedString(64).optional(),
  actor: z.object({ type: boundedString(64).optional(), id: boundedString(MAX_ACTOR_ID_LENGTH), name: boundedString(MAX_NAME_LENGTH).optional() }).optional(),
  object: z.object({ id: MessageIdSchema }),
});

const NoteSchema = z.object({ ...NoteBase, inReplyTo: InReplyToSchema.optional() });

const AppApiKeys = { appId: boundedString(64).optional(), route: boundedString(256).optional() };

export const TalkCreateEventSchema = z.object({ ...AppApiKeys, type: z.literal('Create'), actor: PersonSchema, object: NoteSchema, target: CollectionSchema });

// System messages and (until Talk 23) file shares.
export const TalkActivityEventSchema = z.object({
  ...AppApiKeys,
  type: z.literal('Activity'),
  actor: PersonSchema,
  object: z.object(NoteBase),
  target: CollectionSchema,
});

// Join/Leave: the room is in `object`, not `target`.
export const TalkJoinEventSchema = z.object({ ...AppApiKeys, type: z.literal('Join'), actor: PersonSchema, object: CollectionSchema });

export const TalkLeaveEventSchema = z.object({ ...AppApiKeys, type: z.literal('Leave'), actor: PersonSchema, object: CollectionSchema });

const LikeBody = { actor: PersonSchema, object: z.object(NoteBase), target: CollectionSchema, content: boundedString(64).min(1) };

export const TalkLikeEventSchema = z.object({ ...AppApiKeys, type: z.literal('Like'), ...LikeBody });

export const TalkUndoEventSchema = z.object({
  ...AppApiKeys,
  type: z.literal('Undo'),
  actor: PersonSchema,
  object: z.object({ type: z.literal('Like'), ...LikeBody }),
  target: CollectionSchema,
});

export type TalkParameter = z.output<typeof TalkParameterSchema>;
export type TalkContent = z.output<typeof TalkContentSchema>;
export type TalkCreateEvent = z.output<typeof TalkCreateEventSchema>;
export type TalkActivityEvent = z.output<typeof TalkActivityEventSchema>;
export type TalkJoinEvent = z.output<typeof TalkJoinEventSchema>;
export type TalkLeaveEvent = z.output<typeof TalkLeaveEventSchema>;
export type TalkLikeEvent = z.output<typeof TalkLikeEventSchema>;
export type TalkUndoEvent = z.output<typeof TalkUndoEventSchema>;
export type TalkWebhookEvent = TalkCreateEvent | TalkActivityEvent | TalkJoinEvent | TalkLeaveEvent | TalkLikeEvent | TalkUndoEvent;
export type TalkWebhookType = TalkWebhookEvent['type'];

export type ParseTalkWebhookResult = { ok: true; event: TalkWebhookEvent } | { ok: false; reason: 'unknown-type' | 'invalid'; detail: string };

const SCHEMAS: Record<TalkWebhookType, z.ZodType<TalkWebhookEvent>> = {
  Create: TalkCreateEventSchema,
  Activity: TalkActivityEventSchema,
  Join: TalkJoinEventSchema,
  Leave: TalkLeaveEventSchema,
  Like: TalkLikeEventSchema,
  Undo: TalkUndoEventSchema,
};

function isKnownType(t: string): t is TalkWebhookType {
  return Object.hasOwn(SCHEMAS, t);
}

// Parameter keys come from the body, so they are masked: no body text reaches the logs.
function describePath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(body)';
  return path
    .map((seg, i) => {
      if (path[i - 1] === 'parameters') return '*';
      return typeof seg === 'number' || (typeof seg === 'string' && /^[A-Za-z0-9_-]{1,32}$/.test(seg)) ? String(seg) : '*';
    })
    .join('.');
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  return `${describePath(issue.path)}: ${issue.message}`.slice(0, 200);
}

export function parseTalkWebhook(body: unknown): ParseTalkWebhookResult {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { ok: false, reason: 'invalid', detail: '(body): expected an object' };
  }
  const type: unknown = (body as Record<string, unknown>)['type'];
  if (typeof type !== 'string') return { ok: false, reason: 'invalid', detail: 'type: expected string' };
  if (!isKnownType(type)) {
    const shown = /^[A-Za-z]{1,32}$/.test(type) ? type : '(unprintable)';
    return { ok: false, reason: 'unknown-type', detail: `type ${shown} not handled` };
  }
  const result = SCHEMAS[type].safeParse(body);
  if (!result.success) return { ok: false, reason: 'invalid', detail: describeIssue(result.error) };
  return { ok: true, event: result.data };
}
