// Issue 10 end to end through Talk: an admin creates an agent profile (S13 account checks) and
// grants it to a bot with a folder scope, the owner assigns it, and alice's message makes the bot
// write into that folder as `nuqloud-ai`; the audit shows it. The same bot without the profile acts
// as alice; disabling the profile or withdrawing the grant stops calls at once; no secret leaks.
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { after, before, describe, it } from 'node:test';
import { AgentProfileStore } from '../../lib/agent-profiles/profile-store.ts';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { assertNowhere, persistedTexts } from '../helpers/leak-check.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';
import { fakeTeams } from '../fakes/nextcloud/teams-groups.ts';
import { AGENT_ACCOUNT_USERS, DEFAULT_USERS } from '../fakes/nextcloud/users.ts';

const SECRET = 'bridge-token-9f8e7d6c5b4a39281706';

for (const dialect of DIALECTS) {
  describe(`agent profiles through Talk on ${dialect}`, () => {
    let s: TalkScenario;
    let room: string;
    let bot: Bot;
    let profileId = '';
    let grantId = '';
    /** Every API answer of this test, for the leak check. */
    const answers: string[] = [];

    const api = async (uid: string, method: string, path: string, body?: unknown) => {
      const r = await s.h.fetch(path, { method, headers: s.h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
      answers.push(r.text);
      return r;
    };
    const davCallsSince = (mark: number) => s.h.nc.calls.slice(mark).filter((c) => c.path.startsWith('/remote.php/dav/files/'));
    /** Answers the server's confirmation request of the last turn, if there was one. */
    const confirm = async (): Promise<boolean> => {
      const code =
        /Confirmation needed\*\* \(code (\d{4,6})\)/.exec(s.bot(room).at(-1)?.message ?? '')?.[1] ??
        /Confirmation needed\*\* \(code (\d{4,6})\)/.exec(s.bot(room).at(-2)?.message ?? '')?.[1];
      if (!code) return false;
      await s.say(room, 'alice', `@filer yes ${code}`);
      await s.idle();
      return true;
    };
    const toolMessages = () =>
      s.llm
        .chatRequests()
        .flatMap((r) =>
          ((r.body as { messages?: Array<{ role: string; content: string | null }> }).messages ?? [])
            .filter((m) => m.role === 'tool')
            .map((m) => String(m.content)),
        );
    const profileBody = (over: Record<string, unknown> = {}) => ({
      label: 'NuQloud AI',
      accountUid: 'nuqloud-ai',
      scopeDescription: 'The shared AI folder',
      toolFamilies: ['files'],
      triggerGroups: ['educai-students'],
      confirmGroups: ['educai-students'],
      enabled: true,
      ...over,
    });
    /** `readFirst`: the model reads that file in the turn first, so its content taints the turn (S6). */
    const ask = async (toolArgs: Record<string, unknown>, readFirst?: string) => {
      const mark = s.h.nc.calls.length;
      if (readFirst) s.llm.enqueue({ toolCalls: [{ name: 'files_read', arguments: JSON.stringify({ path: readFirst }) }] });
      s.llm.enqueue({ toolCalls: [{ name: 'files_create', arguments: JSON.stringify(toolArgs) }] }, { text: ['Done.'] });
      await s.say(room, 'alice', '@filer please write the report');
      await s.idle();
      return mark;
    };

    before(async () => {
      s = await startTalkScenario({
        dialect,
        users: [...DEFAULT_USERS, ...AGENT_ACCOUNT_USERS, { id: 'helper-ai', displayName: 'Helper AI', groups: ['service-accounts'] }],
      });
      fakeTeams(s.h.nc).makeSubAdmin('helper-ai', 'service-accounts');
      s.h.nc.dav.files.mkdir('nuqloud-ai', 'Shared');
      s.h.nc.dav.files.mkdir('nuqloud-ai', 'Shared/AI');
      room = s.groupRoom();
      bot = await s.h.application.bots.create({ mention: 'filer', displayName: 'Filer', systemPrompt: 'You file reports.', visibility: 'personal' }, 'alice', {
        approvalStatus: 'personal',
      });
      await s.h.application.index.refresh();
      await s.onboard(room, bot, 'A');
    });
    after(() => s.close());

    it('refuses profiles backed by an admin, a sub-admin, a missing or a disabled account (S13)', async () => {
      for (const [uid, why] of [
        ['root-ai', /administrator/],
        ['helper-ai', /sub-admin/],
        ['ghost-ai', /no Nextcloud account ghost-ai/],
        ['retired-ai', /disabled/],
      ] as const) {
        const r = await api('admin', 'POST', '/api/v1/admin/agent-profiles', profileBody({ accountUid: uid }));
        assert.equal(r.status, 400, `${uid}: ${r.text}`);
        assert.match(r.json.error.details.fields.accountUid, why);
      }
      const notAdmin = await api('alice', 'POST', '/api/v1/admin/agent-profiles', profileBody());
      assert.equal(notAdmin.status, 403);
      const settings = await api('admin', 'PUT', '/api/v1/admin/agent-profile-settings', { delegatedAdminGroups: ['service-accounts'] });
      assert.equal(settings.status, 200);
      const delegated = await api('admin', 'POST', '/api/v1/admin/agent-profiles', profileBody());
      assert.equal(delegated.status, 400);
      assert.match(delegated.json.error.details.fields.accountUid, /delegated admin rights \(service-accounts\)/);
      await api('admin', 'PUT', '/api/v1/admin/agent-profile-settings', { delegatedAdminGroups: [] });
    });

    it('an admin creates a profile with a write-only credential and grants it to the bot with a folder scope', async () => {
      const created = await api('admin', 'POST', '/api/v1/admin/agent-profiles', profileBody({ credentials: [{ name: 'bridge-token', value: SECRET }] }));
      assert.equal(created.status, 200, created.text);
      profileId = created.json.profile.id;
      assert.deepEqual(created.json.profile.credentials, [{ name: 'bridge-token', set: true }]);
      const kept = await api('admin', 'PUT', `/api/v1/admin/agent-profiles/${profileId}`, profileBody({ credentials: [{ name: 'bridge-token' }] }));
      assert.equal(kept.status, 200, kept.text);
      await new AgentProfileStore(s.h.application.database.db, s.h.application.vault).withProfileCredential(profileId, 'bridge-token', async (value) => {
        assert.equal(value, SECRET, 'the stored value was kept');
        // A careless log line right before an outbound request: the redactor knows the value.
        s.h.application.logger.info({ note: `calling the bridge with ${value}` }, 'outbound bridge call');
      });
      const granted = await api('admin', 'POST', `/api/v1/admin/agent-profiles/${profileId}/grants`, { botId: bot.id, maxScope: { folders: ['Shared/AI'] } });
      assert.equal(granted.status, 200, granted.text);
      grantId = granted.json.grants[0].id;
      const offered = await api('alice', 'GET', `/api/v1/bots/${bot.id}/agent-profiles`);
      assert.deepEqual(
        offered.json.profiles.map((p: { id: string; maxScope: unknown }) => [p.id, p.maxScope]),
        [[profileId, { folders: ['Shared/AI'] }]],
      );
      assert.equal((await api('bob', 'GET', `/api/v1/bots/${bot.id}/agent-profiles`)).status, 403);
    });

    it('the owner can reference the profile id only, within the granted scope; no API takes a uid or endpoint', async () => {
      const put = (config: Record<string, unknown>) => api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: [{ name: 'files_create', config }] });
      for (const config of [{ uid: 'admin' }, { user: 'admin' }, { endpoint: 'https://evil.example' }, { password: 'x' }, { url: 'https://evil.example' }]) {
        const r = await put(config);
        assert.equal(r.status, 400, JSON.stringify(config));
      }
      const viaBots = await api('alice', 'PUT', `/api/v1/bots/${bot.id}`, {
        tools: [{ name: 'files_create', config: { agentProfile: profileId, uid: 'admin' } }],
      });
      assert.equal(viaBots.status, 400, viaBots.text);
      assert.ok(
        Object.keys(viaBots.json.error.details.fields).some((k) => k.startsWith('tools.files_create')),
        viaBots.text,
      );
      const wide = await put({ agentProfile: profileId, scope: { folders: ['Shared'] } });
      assert.equal(wide.status, 400);
      assert.match(wide.text, /inside the scope an administrator approved/);
      const unknown = await put({ agentProfile: '00000000-0000-4000-8000-000000000000' });
      assert.equal(unknown.status, 400);
      const ok = await put({ agentProfile: profileId, scope: { folders: ['Shared/AI'] } });
      assert.equal(ok.status, 200, ok.text);
    });

    it("alice's message makes the bot write into the folder as nuqloud-ai; the audit shows it", async () => {
      const mark = await ask({ path: 'Shared/AI/report.md', content: 'Quarterly report' });
      assert.equal(s.h.nc.dav.files.read('nuqloud-ai', 'Shared/AI/report.md'), 'Quarterly report');
      // (The turn's tool listing probes the invoker's DAV root for capabilities; every call of the tool itself is the account's.)
      const dav = davCallsSince(mark).filter((c) => c.path.startsWith('/remote.php/dav/files/'));
      assert.ok(dav.some((c) => c.method === 'PUT'));
      assert.deepEqual([...new Set(dav.map((c) => c.user))], ['nuqloud-ai'], 'the fake Nextcloud sees the profile account on every call');
      const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&tool=files_create`);
      assert.equal(audit.status, 200, audit.text);
      const entry = audit.json.entries[0];
      assert.equal(entry.mode, 'agent');
      assert.equal(entry.profileId, profileId);
      assert.equal(entry.invokerUid, 'alice');
      assert.equal(entry.actingUid, 'nuqloud-ai');
      assert.equal(entry.outcome, 'ok');
      assert.equal(entry.roomToken, room);
      assert.match(entry.argsHash, /^[0-9a-f]{64}$/);
    });

    it('a confirmed agent-mode action runs again as the account, after the resolver checked it once more', async () => {
      // Issue 23: the bot's earlier answer no longer taints the turn; reading the report in it does.
      const config = { agentProfile: profileId, scope: { folders: ['Shared/AI'] } };
      const tools = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, {
        tools: [
          { name: 'files_read', config },
          { name: 'files_create', config },
        ],
      });
      assert.equal(tools.status, 200, tools.text);
      const mark = await ask({ path: 'Shared/AI/second.md', content: 'Second report' }, 'Shared/AI/report.md');
      assert.equal(s.h.nc.dav.files.read('nuqloud-ai', 'Shared/AI/second.md'), null, 'waits for the confirmation (S6)');
      assert.match(s.bot(room).at(-2)?.message ?? '', /Only alice can confirm it/);
      assert.equal(await confirm(), true);
      assert.equal(s.h.nc.dav.files.read('nuqloud-ai', 'Shared/AI/second.md'), 'Second report');
      assert.deepEqual([...new Set(davCallsSince(mark).map((c) => c.user))], ['nuqloud-ai']);
      const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&limit=2`);
      assert.deepEqual(
        audit.json.entries.map((e: { outcome: string; mode: string; actingUid: string; detail: string }) => [
          e.outcome,
          e.mode,
          e.actingUid,
          e.detail.startsWith('confirmed'),
        ]),
        [
          ['ok', 'agent', 'nuqloud-ai', true],
          ['confirmation-requested', 'agent', 'nuqloud-ai', false],
        ],
      );
    });

    it('a model argument naming a user, a profile or a path outside the scope changes nothing', async () => {
      const before = toolMessages().length;
      const mark = await ask({ path: 'Documents/leak.md', content: 'x', user: 'admin', uid: 'admin', agentProfile: 'other', scope: { folders: [] } });
      const result = toolMessages().slice(before).join('\n');
      assert.match(result, /outside the folders this bot may use|Unknown|not allowed|additional/i);
      assert.equal(s.h.nc.dav.files.read('nuqloud-ai', 'Documents/leak.md'), null);
      assert.equal(s.h.nc.dav.files.read('admin', 'Documents/leak.md'), null);
      assert.ok(davCallsSince(mark).every((c) => c.user === 'nuqloud-ai'));
      const escape = await ask({ path: 'Shared/AI/../../escape.md', content: 'x' });
      assert.ok(davCallsSince(escape).every((c) => c.method !== 'PUT'));
      assert.match(toolMessages().at(-1) ?? '', /not allowed: use a plain path/);
    });

    it('calls stop as soon as the profile is disabled, and when the grant is withdrawn', async () => {
      const off = await api(
        'admin',
        'PUT',
        `/api/v1/admin/agent-profiles/${profileId}`,
        profileBody({ enabled: false, credentials: [{ name: 'bridge-token' }] }),
      );
      assert.equal(off.status, 200, off.text);
      let mark = await ask({ path: 'Shared/AI/after-disable.md', content: 'x' });
      assert.equal(davCallsSince(mark).length, 0, 'nothing reached Nextcloud');
      assert.match(toolMessages().at(-1) ?? '', /agent profile is disabled/);
      await api('admin', 'PUT', `/api/v1/admin/agent-profiles/${profileId}`, profileBody({ credentials: [{ name: 'bridge-token' }] }));
      const withdrawn = await api('admin', 'DELETE', `/api/v1/admin/agent-profiles/${profileId}/grants/${grantId}`);
      assert.deepEqual(withdrawn.json, { grants: [] });
      mark = await ask({ path: 'Shared/AI/after-grant.md', content: 'x' });
      assert.equal(davCallsSince(mark).length, 0);
      assert.match(toolMessages().at(-1) ?? '', /no longer allowed to use its agent profile/);
      const refused = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&outcome=refused`);
      assert.equal(refused.json.entries.length, 2);
      assert.ok(
        refused.json.entries.every(
          (e: { mode: string; actingUid: string | null; invokerUid: string }) => e.mode === 'agent' && e.actingUid === null && e.invokerUid === 'alice',
        ),
      );
    });

    it('the same bot without the profile acts as the invoking user', async () => {
      const plain = await api('alice', 'PUT', `/api/v1/bots/${bot.id}/tools`, { tools: [{ name: 'files_create', config: {} }] });
      assert.equal(plain.status, 200, plain.text);
      const mark = await ask({ path: 'alice-notes.md', content: 'mine' });
      // Issue 23: only the bot's own earlier answers are in memory, which do not taint the turn, and a new
      // file in alice's own unshared home is private: it is written without a question.
      assert.equal(await confirm(), false, JSON.stringify(s.bot(room).slice(-2)));
      assert.equal(s.h.nc.dav.files.read('alice', 'alice-notes.md'), 'mine');
      assert.deepEqual([...new Set(davCallsSince(mark).map((c) => c.user))], ['alice']);
      const audit = await api('admin', 'GET', `/api/v1/admin/audit?botId=${bot.id}&mode=user&limit=1`);
      assert.equal(audit.json.entries[0].actingUid, 'alice');
      assert.equal(audit.json.entries[0].profileId, null);
    });

    it('the secret never appears in logs, traces or API answers', async () => {
      await api('admin', 'GET', '/api/v1/admin/agent-profiles');
      await api('admin', 'GET', `/api/v1/admin/agent-profiles/${profileId}`);
      await api('admin', 'GET', '/api/v1/admin/audit');
      await api('admin', 'GET', '/api/v1/admin/traces');
      await api('alice', 'GET', '/api/v1/traces');
      const texts = await persistedTexts(s);
      assert.ok(texts.traceEvents !== '[]' && answers.length > 20);
      assert.ok(
        s.h.logLines.some((l) => l.includes('outbound bridge call')),
        'the careless log line was written',
      );
      assertNowhere(SECRET, { ...texts, answers: answers.join('\n') });
      const db = s.h.application.database.db;
      const stored = await sql<{ ciphertext: string }>`select ciphertext from secrets`.execute(db);
      assert.ok(
        stored.rows.every((r) => !r.ciphertext.includes(SECRET)),
        'sealed at rest',
      );
    });

    it('a deleted profile takes its grants and credentials with it', async () => {
      const gone = await api('admin', 'DELETE', `/api/v1/admin/agent-profiles/${profileId}`);
      assert.deepEqual(gone.json, { deleted: true });
      assert.equal((await api('admin', 'GET', `/api/v1/admin/agent-profiles/${profileId}`)).status, 404);
      assert.equal(await s.h.application.vault.has(`agent-profile:${profileId}:credential:bridge-token`), false);
    });
  });
}
