// The JSON shapes of the bots API: request bodies (validated) and answers (documented in the OpenAPI document).
import { z } from 'zod';
import { MAX_ANSWERS_PER_QUESTION, MAX_QUESTIONS, MAX_TEXT_LENGTH } from './question-tree.ts';
import { BOT_FIELD_SCHEMAS, TEAM_ID_PATTERN } from './bot-store.ts';

/** Schemas whose JSON Schema is better described by another schema (the tree is checked by its own validator). */
export const DOCUMENTED_AS = new WeakMap<z.ZodType, z.ZodType>();

const idDoc = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
export const questionTreeSchema = z
  .object({
    start: idDoc,
    questions: z
      .array(
        z.object({
          id: idDoc,
          text: z.string().min(1).max(MAX_TEXT_LENGTH),
          answers: z
            .array(
              z.object({
                id: idDoc,
                text: z.string().min(1).max(MAX_TEXT_LENGTH),
                next: idDoc.nullable().optional().describe('The next question, or null to finish'),
                type: z.enum(['choice', 'free_text']).optional(),
              }),
            )
            .min(1)
            .max(MAX_ANSWERS_PER_QUESTION),
        }),
      )
      .min(1)
      .max(MAX_QUESTIONS),
  })
  .describe('Onboarding questions: a tree of questions whose answers lead to the next question');

const questionTreeInput = z.unknown().describe('Onboarding question tree, or null for the plain A/B onboarding');
DOCUMENTED_AS.set(questionTreeInput, questionTreeSchema.nullable());

export const toolAssignmentSchema = z.object({
  name: z.string({ error: 'Must be a tool name' }).regex(/^[A-Za-z0-9_-]{1,64}$/, 'Not a valid tool name'),
  config: z.record(z.string(), z.unknown(), { error: 'Must be an object' }).optional(),
});

const toolsInput = z.array(toolAssignmentSchema, { error: 'Must be a list of tools' }).max(200, 'At most 200 tools');

const F = BOT_FIELD_SCHEMAS;
const mentionInput = F.mention.describe('Letters, digits, "_" and "-" (1 to 100), case-insensitive, with or without a leading "@"; fixed after creation');
DOCUMENTED_AS.set(
  mentionInput,
  z
    .string()
    .regex(/^@?[A-Za-z0-9_-]{1,100}$/)
    .describe('Fixed after creation; Talk keywords such as "all" are reserved'),
);

const editable = {
  displayName: F.displayName,
  description: F.description.optional(),
  systemPrompt: F.systemPrompt.optional(),
  model: F.model.optional().describe('A model reference (primary:<id>, secondary:<id> or a bare id); null or "" for the default model'),
  temperature: F.temperature.optional().describe('0 to 1; null inherits the administrator default'),
  active: F.active.optional(),
  visibility: F.visibility.optional(),
  allowedGroups: F.allowedGroups.optional(),
  allowedTeams: F.allowedTeams.optional(),
  knowledgeEnabled: F.knowledgeEnabled.optional(),
  guestsAllowed: F.guestsAllowed.optional().describe('Guests and federated users may use it (bots available to everyone only)'),
  tools: toolsInput.optional(),
  onboardingQuestions: questionTreeInput.optional(),
};

export const botCreateSchema = z.object({ ...editable, mention: mentionInput });
export const botUpdateSchema = z.object({
  ...editable,
  displayName: F.displayName.optional(),
  mention: z.string().optional().describe('Only the current mention is accepted'),
});

export type BotCreateBody = z.output<typeof botCreateSchema>;
export type BotUpdateBody = z.output<typeof botUpdateSchema>;

const reviewText = (max: number) => z.string({ error: 'Must be a text' }).trim().max(max, `At most ${max} characters`);
export const questionnaireSchema = z.object({
  reason: reviewText(4000).min(1, 'Tell the reviewers why this bot should be shared'),
  capabilities: reviewText(4000).default(''),
  knowledgeDescription: reviewText(4000).default(''),
  testingNotes: reviewText(4000).default(''),
});

export const rejectSchema = z.object({ reason: reviewText(2000).default('') });
export const approveSchema = z.object({
  revision: z.number().int().optional().describe('The updatedAt the reviewer looked at; a newer edit makes the approval fail with 409'),
  dedicatedTalkBot: z
    .object({ name: z.string().trim().min(1).max(64).optional() })
    .optional()
    .describe('Administrators approving a bot for everyone can give it its own Talk bot'),
});
export const emptySchema = z.object({});
export const talkIdentitySchema = z.object({
  name: z
    .string({ error: 'Must be a text' })
    .trim()
    .min(1, 'Enter a name')
    .max(64, 'Talk bot names have at most 64 bytes (ä or é count 2, most CJK characters 3)')
    // Talk counts bytes (PHP strlen): ä or é take 2, most CJK characters 3.
    .refine((n) => Buffer.byteLength(n) <= 64, 'Talk bot names have at most 64 bytes (ä or é count 2, most CJK characters 3)')
    .optional(),
});

export const ROOM_TOKEN_PATTERN = /^[a-z0-9]{1,64}$/;
export const botIdParams = z.object({ id: z.uuid() });
export const roomParams = z.object({ token: z.string().regex(ROOM_TOKEN_PATTERN) });

export const enableBotSchema = z.object({ botId: z.uuid().optional().describe("Enable this bot's own Talk bot instead of the shared one") });
export const speakSchema = z.object({
  botId: z.uuid({ error: 'Must be a bot id' }),
  mode: z.enum(['new', 'existing'], { error: 'Must be "new" or "existing"' }).default('new'),
  roomName: z.string({ error: 'Must be a text' }).trim().max(255, 'At most 255 characters').optional(),
  roomToken: z.string({ error: 'Must be a room token' }).regex(ROOM_TOKEN_PATTERN, 'Not a room token').optional(),
  message: z.string({ error: 'Must be a text' }).max(30000, 'At most 30000 characters').optional(),
  sendMessage: z.boolean({ error: 'Must be true or false' }).default(true),
});

// --- answers ---

const visibilityOut = z.enum(['personal', 'groups', 'teams', 'global']);
const statusOut = z.enum(['personal', 'draft', 'pending', 'approved']);
const toolOut = z.object({ name: z.string(), config: z.record(z.string(), z.unknown()) });
const questionnaireOut = z.object({ reason: z.string(), capabilities: z.string(), knowledgeDescription: z.string(), testingNotes: z.string() });

export const botConfigOut = z.object({
  displayName: z.string(),
  description: z.string(),
  systemPrompt: z.string(),
  model: z.string().nullable(),
  temperature: z.number().nullable(),
  visibility: visibilityOut,
  allowedGroups: z.array(z.string()),
  allowedTeams: z.array(z.string().regex(TEAM_ID_PATTERN)),
  knowledgeEnabled: z.boolean(),
  guestsAllowed: z.boolean(),
  onboardingQuestions: questionTreeSchema.nullable(),
  tools: z.array(toolOut),
});

export const botOut = botConfigOut.extend({
  id: z.string(),
  ownerUid: z.string(),
  mention: z.string(),
  active: z.boolean(),
  approvalStatus: statusOut,
  submittedAt: z.number().nullable(),
  approvedBy: z.string().nullable(),
  approvedAt: z.number().nullable(),
  rejectionReason: z.string().nullable(),
  testerUid: z.string().nullable(),
  questionnaire: questionnaireOut.nullable(),
  hasPendingChanges: z.boolean(),
  pendingChanges: botConfigOut.nullable().describe('The edit waiting for review; the approved configuration keeps serving meanwhile'),
  talkIdentity: z.object({ route: z.string(), name: z.string() }).nullable(),
  createdAt: z.number(),
  updatedAt: z.number(),
});

export const botAnswer = z.object({ bot: botOut });
export const botListAnswer = z.object({ bots: z.array(botOut) });
export const deleteAnswer = z.object({ success: z.literal(true), queuedRequestsDropped: z.number(), tracesAnonymised: z.number() });

export const approvalItemOut = botOut.extend({ reviewTarget: botConfigOut, isUpdate: z.boolean(), canApprove: z.literal(true) });
export const approvalsAnswer = z.object({ bots: z.array(approvalItemOut) });

export const permissionsAnswer = z.object({
  permissions: z.object({
    isAdmin: z.boolean(),
    isGroupAdmin: z.boolean(),
    isTeamAdmin: z.boolean(),
    hasApprovalRights: z.boolean(),
    adminGroups: z.array(z.string()),
    adminTeams: z.array(z.object({ id: z.string(), displayName: z.string() })),
  }),
  visibilities: z.array(z.object({ value: visibilityOut, label: z.string(), requiresApproval: z.boolean() })),
});

export const catalogItemOut = z.object({
  id: z.string(),
  mention: z.string(),
  displayName: z.string(),
  description: z.string(),
  ownerUid: z.string(),
  visibility: visibilityOut,
  access: z.object({ type: z.enum(['owner', 'tester', 'global', 'group', 'team']), names: z.array(z.string()) }),
  toolCount: z.number(),
  tools: z.array(z.string()),
  runsAs: z
    .array(z.object({ tool: z.string(), profileLabel: z.string() }))
    .describe("Tools that act as an enabled agent profile's service account (the profile's label only)"),
  knowledgeEnabled: z.boolean(),
  knowledgeSourceCount: z.number(),
  hasOnboarding: z.boolean(),
});
export const catalogAnswer = z.object({ bots: z.array(catalogItemOut) });

export const groupsAnswer = z.object({ groups: z.array(z.object({ id: z.string(), displayName: z.string(), canPublish: z.boolean() })) });
export const teamsAnswer = z.object({ teams: z.array(z.object({ id: z.string(), displayName: z.string(), level: z.number(), canPublish: z.boolean() })) });

export const roomOut = z.object({
  token: z.string(),
  displayName: z.string(),
  type: z.number(),
  participantType: z.number(),
  isModerator: z.boolean(),
  readOnly: z.boolean(),
  lastActivity: z.number(),
});
export const roomsAnswer = z.object({ rooms: z.array(roomOut) });
export const botStatusAnswer = z.object({
  token: z.string(),
  isModerator: z.boolean(),
  botEnabled: z.boolean().nullable().describe('null when only moderators could tell'),
  talkBotId: z.number().nullable(),
  dedicated: z.array(z.object({ botId: z.string(), name: z.string(), enabled: z.boolean().nullable() })),
});
export const enableBotAnswer = z.object({ success: z.literal(true), alreadyEnabled: z.boolean(), talkBotId: z.number() });
export const speakAnswer = z.object({
  success: z.literal(true),
  roomToken: z.string(),
  talkUrl: z.string(),
  botEnabled: z.boolean(),
  botWasAlreadyEnabled: z.boolean(),
  messageSent: z.boolean(),
  messageId: z.number().nullable(),
});
export const talkIdentityAnswer = z.object({ talkIdentity: z.object({ route: z.string(), name: z.string() }).nullable() });

export const errorAnswer = z.object({
  error: z.object({ code: z.string(), message: z.string(), details: z.object({ fields: z.record(z.string(), z.string()).optional() }).optional() }),
});
