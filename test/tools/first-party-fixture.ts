// Shared set-up for the first-party tool tests: the fake Nextcloud with alice's and bob's
// files and calendars, a client, and a provider whose confirmations are recorded.
import assert from 'node:assert/strict';
import type { ProposedAction, RequestedConfirmation, StoredAction } from '../../lib/tools/confirmable.ts';
import { NextcloudClient } from '../../lib/nextcloud/client.ts';
import { issueFromConfirmedTalkAuthor } from '../../lib/nextcloud/identity.ts';
import { CapabilityProbe } from '../../lib/tools/first-party-capabilities.ts';
import { FirstPartyToolProvider, type ConfirmationRequester, type ServerToolPolicy } from '../../lib/tools/first-party-provider.ts';
import { createInvocationContext, type InvocationContext, type ToolResult } from '../../lib/tools/tool-provider.ts';
import { FakeNextcloud, type NextcloudVersion, type RecordedCall } from '../fakes/nextcloud/server.ts';

export const APP_ID = 'educai';
export const APP_SECRET = 'first-party-tools-test-secret-0123456789';
export const NOW = Date.UTC(2027, 0, 10, 9, 0, 0);

export const USERS = [
  { id: 'admin', displayName: 'admin', groups: ['admin'] },
  { id: 'alice', displayName: 'Alice', groups: ['educai-students'], email: 'alice@example.com' },
  { id: 'bob', displayName: 'Bob', groups: ['educai-students'], email: 'bob@example.com' },
];

export class RecordingConfirmations implements ConfirmationRequester {
  readonly requests: Array<{ ctx: InvocationContext; action: ProposedAction; id: string }> = [];
  readonly cancelled: string[] = [];
  #n = 0;

  async requestConfirmation(ctx: InvocationContext, action: ProposedAction): Promise<RequestedConfirmation> {
    const id = `req-${++this.#n}`;
    this.requests.push({ ctx, action, id });
    return {
      id,
      code: '4821',
      expiresAt: NOW + 600_000,
      text: `confirm ${action.description}`,
      notification: null,
      superseded: [],
      referenceId: 'f'.repeat(64),
    };
  }

  /** A recorded request as the confirmation service hands it to the executor (secrets unsealed). */
  stored(index = -1): StoredAction {
    const r = this.requests.at(index);
    assert.ok(r, 'a confirmation was requested');
    return {
      id: r.id,
      userUid: r.ctx.user?.uid ?? '',
      botId: r.ctx.botId,
      roomToken: r.ctx.roomToken ?? '',
      providerId: r.action.providerId,
      tool: r.action.tool,
      args: structuredClone(r.action.args),
      binding: structuredClone(r.action.binding),
      ...(r.action.secrets ? { secrets: structuredClone(r.action.secrets) } : {}),
      description: r.action.description,
      hash: '',
      createdAt: NOW,
      expiresAt: NOW + 600_000,
    };
  }

  async deliver(): Promise<{ posted: boolean; notified: boolean }> {
    return { posted: true, notified: false };
  }

  async cancel(id: string): Promise<boolean> {
    this.cancelled.push(id);
    return true;
  }
}

export interface ToolWorld {
  nc: FakeNextcloud;
  client: NextcloudClient;
  provider: FirstPartyToolProvider;
  confirmations: RecordingConfirmations;
  ctx(uid?: string, room?: string | null): InvocationContext;
  run(name: string, args: Record<string, unknown>, ctx?: InvocationContext, config?: Record<string, unknown>): Promise<ToolResult>;
  /** Calls since `mark` (the fake's call index). */
  callsSince(mark: number): RecordedCall[];
  close(): Promise<void>;
}

export async function startToolWorld(options: { serverPolicy?: ServerToolPolicy; now?: () => number; version?: NextcloudVersion } = {}): Promise<ToolWorld> {
  const nc = await FakeNextcloud.start({ appId: APP_ID, appSecret: APP_SECRET, users: USERS, ...(options.version ? { version: options.version } : {}) });
  const client = new NextcloudClient({ baseUrl: nc.url, appId: APP_ID, appVersion: '1.0.0', appSecret: APP_SECRET });
  const confirmations = new RecordingConfirmations();
  const now = options.now ?? (() => NOW);
  const provider = new FirstPartyToolProvider({
    nextcloud: client,
    confirmations,
    capabilities: new CapabilityProbe(client, { now }),
    now,
    ...(options.serverPolicy ? { serverPolicy: options.serverPolicy } : {}),
  });
  const ctx = (uid = 'alice', room: string | null = 'room-a'): InvocationContext =>
    createInvocationContext({ user: issueFromConfirmedTalkAuthor(uid), actorKind: 'user', botId: 'bot-1', roomToken: room, messageId: '100' });
  return {
    nc,
    client,
    provider,
    confirmations,
    ctx,
    run: (name, args, c, config = {}) => provider.executeTool(name, args, config, c ?? ctx()),
    callsSince: (mark) => nc.calls.slice(mark),
    close: () => nc.close(),
  };
}

export function text(result: ToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? String((c as { text: string }).text) : '')).join('\n');
}

export function json(result: ToolResult): Record<string, unknown> {
  return JSON.parse(text(result)) as Record<string, unknown>;
}

/** Seeds the files of capture 21/70: alice's worksheet and folders, bob's private readme. */
export function seedFiles(nc: FakeNextcloud): void {
  nc.dav.files.putFile('alice', 'EducAI-worksheet.txt', 'Worksheet 1: fractions\n');
  nc.dav.files.mkdir('alice', 'Talk');
  nc.dav.files.mkdir('alice', 'educai-share');
  nc.dav.files.putFile('alice', 'educai-share/lesson.txt', 'lesson plan\n');
  nc.dav.files.putFile(
    'alice',
    'pixel.png',
    Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP4zwAE/xkgFAAb8gP91pbyKwAAAABJRU5ErkJggg==', 'base64'),
    'image/png',
  );
  nc.dav.files.putFile('bob', 'Readme.md', 'bob private notes');
  nc.dav.files.putFile('bob', 'secret/plan.txt', 'bob secret plan');
}
