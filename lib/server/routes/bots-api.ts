// /api/v1 for bots: CRUD, review workflow, catalogue, groups and teams, Talk helpers, and the admin's view.
import { Router, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import type { AdminCheck } from '../../appapi/admin-check.ts';
import type { BotAccessPolicy } from '../../bots/bot-access.ts';
import type { BotConfigResolver } from '../../bots/bot-config.ts';
import type { BotDeletion } from '../../bots/bot-deletion.ts';
import * as S from '../../bots/bot-schemas.ts';
import { BotValidationError, type Bot } from '../../bots/bot-store.ts';
import { GovernanceError, type DedicatedTalkBots, type Governance } from '../../bots/governance.ts';
import type { MembershipService } from '../../bots/memberships.ts';
import type { Logger } from '../../log/logger.ts';
import { groupDetails } from '../../nextcloud/appapi.ts';
import type { NextcloudClient } from '../../nextcloud/client.ts';
import { NextcloudForbiddenError } from '../../nextcloud/errors.ts';
import type { ActingUser } from '../../nextcloud/identity.ts';
import { findBotMentions } from '../../talk/mention-detector.ts';
import { RoomBotError, type RoomBots } from '../../talk/room-bots.ts';
import { SHARED_ROUTE } from '../../talk/talk-identities.ts';
import { HttpError } from '../../errors/http-error.ts';
import { apiHeaders, csrfGuard, requireAdmin, requireUser } from '../middleware/access.ts';
import { expressPath, type RouteSpec } from '../openapi.ts';
import { requireActingUser } from '../request-auth.ts';
import { jsonBody } from '../json-body.ts';

export interface BotsApiDeps {
  governance: Governance;
  /** The governed policy (GovernanceAccessPolicy): the same rule as every Talk turn. */
  access: BotAccessPolicy;
  resolver: BotConfigResolver;
  deletion: BotDeletion;
  rooms: RoomBots;
  dedicated: DedicatedTalkBots;
  memberships: MembershipService;
  nextcloud: NextcloudClient;
  adminCheck: AdminCheck;
  logger: Logger;
  /** Knowledge sources per bot, once the knowledge feature exists. */
  knowledge?: { sourceCount(botId: string): Promise<number> };
  /** Agent profiles, for the catalogue's "runs as a service account" (label only). */
  agentProfiles?: { get(id: string): Promise<{ label: string; enabled: boolean } | null> };
  /** After a change that affects routing (mentions, active bots, Talk identities). */
  onChange?: () => void | Promise<void>;
}

type Op =
  | 'listBots'
  | 'createBot'
  | 'getBot'
  | 'updateBot'
  | 'deleteBot'
  | 'submitBot'
  | 'approveBot'
  | 'rejectBot'
  | 'enableTestBot'
  | 'listApprovals'
  | 'getPermissions'
  | 'getCatalog'
  | 'listGroups'
  | 'listTeams'
  | 'listTalkRooms'
  | 'getRoomBotStatus'
  | 'enableRoomBot'
  | 'speakInTalk'
  | 'adminListBots'
  | 'adminGetBot'
  | 'adminUpdateBot'
  | 'adminDeleteBot'
  | 'adminRegisterTalkIdentity'
  | 'adminRemoveTalkIdentity';

const bot = { status: 200, name: 'BotAnswer', schema: S.botAnswer };
const idParams = S.botIdParams;

/** The routes of this router, in the order they are registered. */
export const BOTS_API_SPECS: Array<RouteSpec & { operationId: Op }> = [
  {
    method: 'get',
    path: '/api/v1/bots',
    operationId: 'listBots',
    summary: 'My bots',
    tag: 'bots',
    access: 'user',
    response: { status: 200, name: 'BotList', schema: S.botListAnswer },
  },
  {
    method: 'post',
    path: '/api/v1/bots',
    operationId: 'createBot',
    summary: 'Create a bot (personal, or shared: approved directly when I may publish to that scope, else a draft)',
    tag: 'bots',
    access: 'user',
    body: { name: 'BotCreate', schema: S.botCreateSchema },
    response: { ...bot, status: 201, name: 'BotCreated' },
    errors: [400, 403],
  },
  {
    method: 'get',
    path: '/api/v1/bots/{id}',
    operationId: 'getBot',
    summary: 'A bot I own or manage',
    tag: 'bots',
    access: 'user',
    params: idParams,
    response: bot,
    errors: [403, 404],
  },
  {
    method: 'put',
    path: '/api/v1/bots/{id}',
    operationId: 'updateBot',
    summary: 'Edit a bot; an edit of an approved bot waits for review while the approved version keeps serving',
    tag: 'bots',
    access: 'user',
    params: idParams,
    body: { name: 'BotUpdate', schema: S.botUpdateSchema },
    response: bot,
    errors: [400, 403, 404],
  },
  {
    method: 'delete',
    path: '/api/v1/bots/{id}',
    operationId: 'deleteBot',
    summary: 'Delete a bot with everything that belongs to it',
    tag: 'bots',
    access: 'user',
    params: idParams,
    response: { status: 200, name: 'BotDeleted', schema: S.deleteAnswer },
    errors: [403, 404, 502],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/submit',
    operationId: 'submitBot',
    summary: 'Submit a draft for review with the questionnaire',
    tag: 'review',
    access: 'user',
    params: idParams,
    body: { name: 'Questionnaire', schema: S.questionnaireSchema },
    response: bot,
    errors: [400, 403, 404, 409],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/approve',
    operationId: 'approveBot',
    summary: 'Approve a submission',
    tag: 'review',
    access: 'user',
    params: idParams,
    body: { name: 'Approval', schema: S.approveSchema },
    response: bot,
    errors: [400, 403, 404, 409],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/reject',
    operationId: 'rejectBot',
    summary: 'Reject a submission with a reason',
    tag: 'review',
    access: 'user',
    params: idParams,
    body: { name: 'Rejection', schema: S.rejectSchema },
    response: bot,
    errors: [400, 403, 404, 409],
  },
  {
    method: 'post',
    path: '/api/v1/bots/{id}/enable-test',
    operationId: 'enableTestBot',
    summary: 'Talk to the pending version as its reviewer',
    tag: 'review',
    access: 'user',
    params: idParams,
    response: bot,
    errors: [403, 404, 409],
  },
  {
    method: 'get',
    path: '/api/v1/approvals',
    operationId: 'listApprovals',
    summary: 'Submissions I may review',
    tag: 'review',
    access: 'user',
    response: { status: 200, name: 'Approvals', schema: S.approvalsAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/permissions',
    operationId: 'getPermissions',
    summary: 'What I may publish and review',
    tag: 'review',
    access: 'user',
    response: { status: 200, name: 'Permissions', schema: S.permissionsAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/catalog',
    operationId: 'getCatalog',
    summary: 'Bots I can use, with the reason and their tools and knowledge',
    tag: 'catalog',
    access: 'user',
    response: { status: 200, name: 'Catalog', schema: S.catalogAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/groups',
    operationId: 'listGroups',
    summary: 'Groups I can choose',
    tag: 'catalog',
    access: 'user',
    response: { status: 200, name: 'Groups', schema: S.groupsAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/teams',
    operationId: 'listTeams',
    summary: 'Teams I belong to',
    tag: 'catalog',
    access: 'user',
    response: { status: 200, name: 'Teams', schema: S.teamsAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/talk/rooms',
    operationId: 'listTalkRooms',
    summary: 'My Talk conversations, those I moderate first',
    tag: 'talk',
    access: 'user',
    response: { status: 200, name: 'TalkRooms', schema: S.roomsAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/talk/rooms/{token}/bot-status',
    operationId: 'getRoomBotStatus',
    summary: 'Whether our Talk bot is enabled in a conversation',
    tag: 'talk',
    access: 'user',
    params: S.roomParams,
    response: { status: 200, name: 'RoomBotStatus', schema: S.botStatusAnswer },
    errors: [404],
  },
  {
    method: 'post',
    path: '/api/v1/talk/rooms/{token}/enable-bot',
    operationId: 'enableRoomBot',
    summary: 'Enable our Talk bot in a conversation I moderate',
    tag: 'talk',
    access: 'user',
    params: S.roomParams,
    body: { name: 'EnableRoomBot', schema: S.enableBotSchema },
    response: { status: 200, name: 'RoomBotEnabled', schema: S.enableBotAnswer },
    errors: [400, 403, 404, 409],
  },
  {
    method: 'post',
    path: '/api/v1/talk/speak',
    operationId: 'speakInTalk',
    summary: 'Speak in Talk: create or pick a conversation I moderate, enable the bot, optionally post my first message',
    tag: 'talk',
    access: 'user',
    body: { name: 'SpeakInTalk', schema: S.speakSchema },
    response: { status: 200, name: 'SpeakInTalkResult', schema: S.speakAnswer },
    errors: [400, 403, 404, 409],
  },
  {
    method: 'get',
    path: '/api/v1/admin/bots',
    operationId: 'adminListBots',
    summary: 'All bots',
    tag: 'admin',
    access: 'admin',
    response: { status: 200, name: 'AdminBotList', schema: S.botListAnswer },
  },
  {
    method: 'get',
    path: '/api/v1/admin/bots/{id}',
    operationId: 'adminGetBot',
    summary: 'Any bot',
    tag: 'admin',
    access: 'admin',
    params: idParams,
    response: { ...bot, name: 'AdminBot' },
    errors: [404],
  },
  {
    method: 'put',
    path: '/api/v1/admin/bots/{id}',
    operationId: 'adminUpdateBot',
    summary: 'Edit any bot',
    tag: 'admin',
    access: 'admin',
    params: idParams,
    body: { name: 'AdminBotUpdate', schema: S.botUpdateSchema },
    response: { ...bot, name: 'AdminBotUpdated' },
    errors: [400, 404],
  },
  {
    method: 'delete',
    path: '/api/v1/admin/bots/{id}',
    operationId: 'adminDeleteBot',
    summary: 'Delete any bot with everything that belongs to it',
    tag: 'admin',
    access: 'admin',
    params: idParams,
    response: { status: 200, name: 'AdminBotDeleted', schema: S.deleteAnswer },
    errors: [404, 502],
  },
  {
    method: 'post',
    path: '/api/v1/admin/bots/{id}/talk-identity',
    operationId: 'adminRegisterTalkIdentity',
    summary: 'Give an approved global bot its own Talk bot (name ≤ 64 bytes of UTF-8)',
    tag: 'admin',
    access: 'admin',
    params: idParams,
    body: { name: 'TalkIdentityRequest', schema: S.talkIdentitySchema },
    response: { status: 200, name: 'TalkIdentity', schema: S.talkIdentityAnswer },
    errors: [400, 404, 409, 502],
  },
  {
    method: 'delete',
    path: '/api/v1/admin/bots/{id}/talk-identity',
    operationId: 'adminRemoveTalkIdentity',
    summary: 'Remove the bot\u2019s own Talk bot',
    tag: 'admin',
    access: 'admin',
    params: idParams,
    response: { status: 200, name: 'TalkIdentityRemoved', schema: S.talkIdentityAnswer },
    errors: [404, 502],
  },
];

type Handler = (req: Request, res: Response, user: ActingUser) => Promise<void>;

function fieldsOf(error: z.ZodError): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const issue of error.issues) {
    const key = issue.path.length > 0 ? issue.path.map(String).join('.') : 'input';
    fields[key] ??= issue.message;
  }
  return fields;
}

function invalid(fields: Record<string, string>): HttpError {
  return new HttpError(
    400,
    'validation',
    `Invalid input: ${Object.entries(fields)
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ')}`,
    { fields },
  );
}

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw invalid(fieldsOf(parsed.error));
  return parsed.data;
}

function botId(req: Request): string {
  const parsed = S.botIdParams.safeParse(req.params);
  if (!parsed.success) throw new HttpError(404, 'not_found', 'Bot not found');
  return parsed.data.id;
}

function roomToken(req: Request): string {
  const parsed = S.roomParams.safeParse(req.params);
  if (!parsed.success) throw new HttpError(404, 'room_not_found', 'Conversation not found');
  return parsed.data.token;
}

/** Domain errors as HTTP answers with messages fit for people. */
function toHttp(err: unknown): unknown {
  if (err instanceof HttpError) return err;
  if (err instanceof BotValidationError) return invalid(err.fields);
  if (err instanceof GovernanceError || err instanceof RoomBotError) return new HttpError(err.status, err.code, err.message);
  if (err instanceof NextcloudForbiddenError) return new HttpError(403, 'nextcloud_forbidden', 'Nextcloud refused this for your account');
  return err;
}

export function botsApiRoutes(deps: BotsApiDeps): Router {
  const router = Router();
  const { governance: gov } = deps;
  const json = jsonBody({ limit: '256kb' });
  const changed = async () => {
    try {
      await deps.onChange?.();
    } catch (err) {
      deps.logger.warn({ err }, 'refreshing after a bot change failed');
    }
  };

  const present = async (b: Bot) => {
    const live = await gov.liveConfig(b);
    const pending = await gov.pendingConfig(b);
    return {
      id: b.id,
      ownerUid: b.ownerUid,
      mention: b.mention,
      active: b.active,
      ...live,
      approvalStatus: b.approvalStatus,
      submittedAt: b.submittedAt,
      approvedBy: b.approvedBy,
      approvedAt: b.approvedAt,
      rejectionReason: b.rejectionReason,
      testerUid: b.testerUid,
      questionnaire: b.questionnaire,
      hasPendingChanges: pending !== null,
      pendingChanges: pending,
      talkIdentity: await deps.dedicated.current(b.id),
      createdAt: b.createdAt,
      updatedAt: b.updatedAt,
    };
  };

  const managed = async (user: ActingUser, id: string): Promise<Bot> => {
    const b = await gov.require(id);
    if (!(await gov.canManage(user, b))) throw new HttpError(403, 'forbidden', 'This bot is not yours to manage');
    return b;
  };

  const remove = async (id: string) => {
    const result = await deps.deletion.delete(id);
    await changed();
    return { success: true as const, queuedRequestsDropped: result.droppedRequests.length, tracesAnonymised: result.tracesAnonymised };
  };

  const handlers: Record<Op, Handler> = {
    listBots: async (_req, res, user) => {
      const bots = await gov.listOwned(user.uid);
      res.json({ bots: await Promise.all(bots.map(present)) });
    },
    createBot: async (req, res, user) => {
      const created = await gov.create(user, req.body);
      await changed();
      res.status(201).json({ bot: await present(created) });
    },
    getBot: async (req, res, user) => {
      res.json({ bot: await present(await managed(user, botId(req))) });
    },
    updateBot: async (req, res, user) => {
      const updated = await gov.update(user, botId(req), req.body);
      await changed();
      res.json({ bot: await present(updated) });
    },
    deleteBot: async (req, res, user) => {
      const id = botId(req);
      await managed(user, id);
      res.json(await remove(id));
    },
    submitBot: async (req, res, user) => {
      res.json({ bot: await present(await gov.submit(user, botId(req), req.body)) });
    },
    approveBot: async (req, res, user) => {
      const id = botId(req);
      const body = parseBody(S.approveSchema, req.body);
      if (body.dedicatedTalkBot) {
        const view = await gov.review(user, id);
        const m = await gov.memberships(user);
        if (!m.isAdmin || view.target.visibility !== 'global')
          throw invalid({ dedicatedTalkBot: 'Only administrators approving a bot for everyone can give it its own Talk bot' });
      }
      let approved = await gov.approve(user, id, body.revision === undefined ? {} : { revision: body.revision });
      if (body.dedicatedTalkBot) {
        await deps.dedicated.register(approved, body.dedicatedTalkBot.name);
        approved = await gov.require(id);
      }
      await changed();
      res.json({ bot: await present(approved) });
    },
    rejectBot: async (req, res, user) => {
      const body = parseBody(S.rejectSchema, req.body);
      res.json({ bot: await present(await gov.reject(user, botId(req), body.reason)) });
    },
    enableTestBot: async (req, res, user) => {
      res.json({ bot: await present(await gov.enableTest(user, botId(req))) });
    },
    listApprovals: async (_req, res, user) => {
      const views = await gov.pendingFor(user);
      res.json({
        bots: await Promise.all(
          views.map(async (v) => ({ ...(await present(v.bot)), reviewTarget: v.target, isUpdate: v.isUpdate, canApprove: true as const })),
        ),
      });
    },
    getPermissions: async (_req, res, user) => {
      const { visibilities, ...permissions } = await gov.permissions(user);
      res.json({ permissions, visibilities });
    },
    getCatalog: async (_req, res, user) => {
      const labels = new Map<string, string | null>();
      const runsAs = async (tools: ReadonlyArray<{ name: string; config: Record<string, unknown> }>) => {
        const out: Array<{ tool: string; profileLabel: string }> = [];
        for (const t of tools) {
          const id = t.config['agentProfile'];
          if (typeof id !== 'string' || !deps.agentProfiles) continue;
          if (!labels.has(id)) {
            const profile = await deps.agentProfiles.get(id);
            labels.set(id, profile?.enabled ? profile.label : null);
          }
          const label = labels.get(id);
          if (label) out.push({ tool: t.name, profileLabel: label });
        }
        return out;
      };
      const items = [];
      for (const b of await gov.listActive()) {
        const decision = await deps.access.canUse(b, { kind: 'user', uid: user.uid, user });
        if (!decision.allowed) continue;
        const type = decision.reason;
        if (type !== 'owner' && type !== 'tester' && type !== 'global' && type !== 'group' && type !== 'team') continue;
        const effective = await deps.resolver.effectiveBot(b, { kind: 'user', uid: user.uid, user });
        items.push({
          id: b.id,
          mention: b.mention,
          displayName: effective.displayName,
          description: effective.description,
          ownerUid: b.ownerUid,
          visibility: effective.visibility,
          access: { type, names: decision.names ?? [] },
          toolCount: effective.tools.length,
          tools: effective.tools.map((t) => t.name),
          runsAs: await runsAs(effective.tools),
          knowledgeEnabled: effective.knowledgeEnabled,
          knowledgeSourceCount: effective.knowledgeEnabled && deps.knowledge ? await deps.knowledge.sourceCount(b.id) : 0,
          hasOnboarding: effective.onboardingQuestions !== null,
        });
      }
      res.json({ bots: items });
    },
    listGroups: async (_req, res, user) => {
      const m = await deps.memberships.forUser(user);
      const names = new Map<string, string>();
      for (const g of [...m.groups, ...m.subAdminGroups]) names.set(g, g);
      if (m.isAdmin || m.subAdminGroups.length > 0) {
        // Administrators see every group, sub-admins the groups they administer.
        const details = await groupDetails(deps.nextcloud, user, 200);
        for (const g of details?.groups ?? [])
          if (typeof g.id === 'string') names.set(g.id, typeof g.displayname === 'string' && g.displayname !== '' ? g.displayname : g.id);
      }
      const groups = [...names]
        .map(([id, displayName]) => ({ id, displayName, canPublish: m.isAdmin || m.subAdminGroups.includes(id) }))
        .sort((a, b) => a.displayName.localeCompare(b.displayName) || a.id.localeCompare(b.id))
        .slice(0, 200);
      res.json({ groups });
    },
    listTeams: async (_req, res, user) => {
      const m = await deps.memberships.forUser(user);
      const teams = m.teams
        .map((t) => ({ id: t.id, displayName: t.displayName, level: t.level, canPublish: m.isAdmin || t.level >= 4 }))
        .sort((a, b) => a.displayName.localeCompare(b.displayName));
      res.json({ teams });
    },
    listTalkRooms: async (_req, res, user) => {
      res.json({ rooms: await deps.rooms.listRooms(user) });
    },
    getRoomBotStatus: async (req, res, user) => {
      const token = roomToken(req);
      const dedicated = await gov.dedicatedIdentities();
      const status = await deps.rooms.status(user, token, [SHARED_ROUTE, ...dedicated.map((d) => d.route)]);
      const shared = status.enabled.get(SHARED_ROUTE);
      res.json({
        token,
        isModerator: status.room.isModerator,
        botEnabled: shared?.enabled ?? null,
        talkBotId: shared?.talkBotId ?? null,
        dedicated: dedicated.map((d) => ({ botId: d.botId, name: d.name, enabled: status.enabled.get(d.route)?.enabled ?? null })),
      });
    },
    enableRoomBot: async (req, res, user) => {
      const token = roomToken(req);
      const body = parseBody(S.enableBotSchema, req.body);
      let route = SHARED_ROUTE;
      if (body.botId) {
        const b = await gov.require(body.botId);
        if (!(await deps.access.canUse(b, { kind: 'user', uid: user.uid, user })).allowed) throw new HttpError(403, 'no_access', 'You cannot use this bot');
        const identity = await deps.dedicated.current(b.id);
        if (!identity) throw new HttpError(404, 'no_talk_identity', 'This bot has no Talk bot of its own');
        route = identity.route;
      }
      const result = await deps.rooms.enable(user, token, route);
      res.json({ success: true, alreadyEnabled: result.alreadyEnabled, talkBotId: result.talkBotId });
    },
    speakInTalk: async (req, res, user) => {
      const body = parseBody(S.speakSchema, req.body);
      const b = await gov.get(body.botId);
      if (!b) throw invalid({ botId: 'No such bot' });
      if (!(await deps.access.canUse(b, { kind: 'user', uid: user.uid, user })).allowed) throw new HttpError(403, 'no_access', 'You cannot use this bot');
      let token: string;
      if (body.mode === 'existing') {
        if (!body.roomToken) throw invalid({ roomToken: 'Choose a conversation' });
        const room = await deps.rooms.room(user, body.roomToken);
        if (!room) throw new HttpError(404, 'room_not_found', 'Conversation not found');
        if (!room.isModerator) throw new HttpError(403, 'not_moderator', 'Only moderators of this conversation can add the bot');
        token = room.token;
      } else {
        const name = (body.roomName || `Chat with ${b.displayName}`).slice(0, 255);
        token = (await deps.rooms.createRoom(user, name)).token;
      }
      const enabled = await deps.rooms.enable(user, token, SHARED_ROUTE);
      let messageId: number | null = null;
      const text = (body.message ?? '').trim();
      const send = body.sendMessage && text !== '';
      if (send) {
        const addressed = findBotMentions(text, new Set([b.mention])).length > 0 ? text : `@${b.mention} ${text}`;
        messageId = await deps.rooms.postAsUser(user, token, addressed);
      }
      res.json({
        success: true,
        roomToken: token,
        talkUrl: deps.rooms.talkUrl(token),
        botEnabled: true,
        botWasAlreadyEnabled: enabled.alreadyEnabled,
        messageSent: send,
        messageId,
      });
    },
    adminListBots: async (_req, res) => {
      res.json({ bots: await Promise.all((await gov.listAll()).map(present)) });
    },
    adminGetBot: async (req, res) => {
      res.json({ bot: await present(await gov.require(botId(req))) });
    },
    adminUpdateBot: async (req, res, user) => {
      const updated = await gov.update(user, botId(req), req.body);
      await changed();
      res.json({ bot: await present(updated) });
    },
    adminDeleteBot: async (req, res) => {
      const id = botId(req);
      await gov.require(id);
      res.json(await remove(id));
    },
    adminRegisterTalkIdentity: async (req, res) => {
      const body = parseBody(S.talkIdentitySchema, req.body);
      const b = await gov.require(botId(req));
      const identity = await deps.dedicated.register(b, body.name);
      await changed();
      res.json({ talkIdentity: identity });
    },
    adminRemoveTalkIdentity: async (req, res) => {
      const b = await gov.require(botId(req));
      await deps.dedicated.unregister(b.id);
      await changed();
      res.json({ talkIdentity: null });
    },
  };

  const userAccess = [apiHeaders(), csrfGuard(), requireUser()];
  const adminAccess = [apiHeaders(), csrfGuard(), requireAdmin(deps.adminCheck, deps.logger)];
  for (const spec of BOTS_API_SPECS) {
    const handler = handlers[spec.operationId];
    const chain: RequestHandler[] = [...(spec.access === 'admin' ? adminAccess : userAccess)];
    if (spec.body) chain.push(json);
    chain.push(async (req: Request, res: Response, next: NextFunction) => {
      try {
        await handler(req, res, requireActingUser(req));
      } catch (err) {
        next(toHttp(err));
      }
    });
    router[spec.method](expressPath(spec.path), ...chain);
  }
  return router;
}
