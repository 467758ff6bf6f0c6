// Knowledge end to end through the real app and Talk webhooks: a bot owner adds a folder (a PDF, a DOCX,
// markdown and a broken file, all made here) through the API; ingestion finishes in the background with
// per-file errors; a Talk question makes the model call rag_search_documents and the answer streams back.
// Documents and images posted in the room are indexed for the bot (images described once), found through
// the room search tools, and go on RESET and when their message is deleted (S21).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import sharp from 'sharp';
import type { Bot } from '../../lib/bots/bot-store.ts';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import type { FakeChatMessage } from '../fakes/nextcloud/talk.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, waitFor, type TalkScenario } from '../helpers/talk-scenario.ts';
import { makeDocx, makePdf } from './helpers/documents.ts';

const DESCRIPTION = 'A bar chart titled "Queue at noon": the canteen queue peaks at 12:10 with 40 students.';

type ChatBody = { messages: Array<{ role: string; content: string | null }>; tools?: Array<{ function: { name: string } }> };

for (const dialect of DIALECTS) {
  describe(`knowledge through Talk on ${dialect}`, () => {
    let s: TalkScenario;
    let fake: FakeKnowledgeEndpoints;
    let bot: Bot;
    let room: string;

    const api = (uid: string, method: string, path: string, body?: unknown) =>
      s.h.fetch(path, { method, headers: s.h.browserHeaders(uid), ...(body !== undefined ? { body } : {}) });
    const toolMessages = (fromRequest: number) =>
      s.llm
        .chatRequests()
        .slice(fromRequest)
        .flatMap((r) => (r.body as unknown as ChatBody).messages)
        .filter((m) => m.role === 'tool')
        .map((m) => m.content ?? '');
    const rows = async (table: 'room_documents' | 'room_images', token = room) =>
      s.h.application.database.db
        .selectFrom(table)
        .select(['id', 'status', 'error', 'message_id', 'name'])
        .where('bot_id', '=', bot.id)
        .where('room_token', '=', token)
        .orderBy('id')
        .execute();

    /** Alice shares one of her files into the room with a message to the bot, as Talk delivers it. */
    const share = async (path: string, text: string, token = room, opts: { messageType?: string } = {}): Promise<FakeChatMessage> => {
      const node = s.h.nc.dav.files.node('alice', path);
      assert.ok(node);
      const file = {
        type: 'file',
        id: String(node.fileId),
        name: node.name,
        size: node.content.length,
        path,
        link: `${s.h.nc.url}/index.php/f/${node.fileId}`,
        mimetype: node.mime,
        'preview-available': 'no',
        permissions: 27,
      };
      const msg = s.h.nc.postMessage(token, { actorType: 'users', actorId: 'alice' }, text, {
        parameters: { actor: { type: 'user', id: 'alice', name: 'Alice' }, file },
        ...opts,
      });
      const r = await s.deliver(s.h.nc.webhookBodyFor(msg));
      assert.equal(r.status, 200);
      return msg;
    };

    before(async () => {
      fake = await FakeKnowledgeEndpoints.start({ describe: () => DESCRIPTION });
      s = await startTalkScenario({ dialect, build: { knowledge: { worker: { pollMs: 50 } } } });
      const saved = await api('admin', 'PUT', '/api/v1/admin/knowledge/settings', {
        embeddingEndpoint: fake.url,
        embeddingModel: 'fake-embed',
        visionEndpoint: fake.url,
        visionModel: 'fake-vision',
        speechEndpoint: fake.url,
        speechModel: 'fake-whisper',
      });
      assert.equal(saved.status, 200, saved.text);

      const files = s.h.nc.dav.files;
      files.putFile(
        'alice',
        'Course/handbook.pdf',
        Buffer.from(await makePdf([['School handbook'], ['Library hours: the school library opens at 7:45 and closes at 16:30 on weekdays.']])),
        'application/pdf',
      );
      files.putFile(
        'alice',
        'Course/rules.docx',
        Buffer.from(makeDocx(['Lab rules: goggles must be worn at all times in the chemistry lab.'])),
        'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
      );
      files.putFile('alice', 'Course/notes.md', '# Notes\n\nThe spring concert takes place in the assembly hall.');
      files.putFile('alice', 'Course/broken.pdf', Buffer.from('%PDF-1.7\nthis is not really a PDF at all'), 'application/pdf');

      bot = await s.createBot({ mention: 'tutor', knowledgeEnabled: true });
      await s.h.application.toolAssignments.replace(bot.id, [
        { name: 'rag_search_documents', config: {} },
        { name: 'room_search_documents', config: {} },
        { name: 'room_search_images', config: {} },
        { name: 'attachment_transcribe_audio', config: {} },
      ]);
      room = s.groupRoom('Class 7b');
      await s.onboard(room, bot, 'A');
    });
    after(async () => {
      await s.close();
      await fake.close();
    });

    it('a folder source is ingested in the background: statuses, progress, per-file errors', async () => {
      const added = await api('alice', 'POST', `/api/v1/bots/${bot.id}/knowledge/sources`, { path: '/Course' });
      assert.equal(added.status, 201, added.text);
      // Queued; the job worker may already have taken it by the time the answer is written.
      assert.ok(['pending', 'indexing'].includes(added.json.source.status), added.text);
      if (added.json.source.status === 'pending') assert.equal(added.json.source.stage, 'queued');
      const id = added.json.source.id as number;
      const seen = new Set<string>();
      await waitFor(
        async () => {
          const r = await api('alice', 'GET', `/api/v1/bots/${bot.id}/knowledge/sources/${id}`);
          seen.add(r.json.source.status);
          return r.json.source.status === 'ready';
        },
        'the folder to be indexed',
        60_000,
      );
      assert.ok(!seen.has('error'));
      const detail = await api('alice', 'GET', `/api/v1/bots/${bot.id}/knowledge/sources/${id}`);
      const source = detail.json.source;
      assert.deepEqual([source.stage, source.files, source.errors, source.progress], ['ready', 4, 1, { current: 4, total: 4, percent: 100 }]);
      assert.equal(source.message, '1 of 4 file(s) could not be indexed.');
      assert.equal(source.embeddingModel, 'fake-embed');
      const files = Object.fromEntries(
        (detail.json.files as Array<{ path: string; status: string; error: string | null; chunks: number }>).map((f) => [f.path, f]),
      );
      for (const ok of ['Course/handbook.pdf', 'Course/rules.docx', 'Course/notes.md']) {
        assert.equal(files[ok]?.status, 'ready', ok);
        assert.ok((files[ok]?.chunks ?? 0) > 0, ok);
      }
      assert.equal(files['Course/broken.pdf']?.status, 'error');
      assert.ok((files['Course/broken.pdf']?.error ?? '').length > 0);
      // The PDF's text, read from its bytes, was embedded (binary files reach the extractor intact).
      assert.ok(
        fake.embeddedInputs().some((t) => t.includes('library opens at 7:45')),
        'the PDF text was embedded',
      );
      assert.ok(
        fake.embeddedInputs().some((t) => t.includes('goggles must be worn')),
        'the DOCX text was embedded',
      );
    });

    it('a question in Talk makes the model search the documents; the answer streams back with the PDF’s text behind it', async () => {
      const before = s.bot(room).length;
      const requests = s.llm.chatRequests().length;
      s.llm.enqueue(
        { toolCalls: [{ name: 'rag_search_documents', arguments: '{"query":"library opening hours weekdays","limit":3}' }] },
        { text: ['The library opens ', 'at 7:45 on weekdays.'] },
      );
      await s.say(room, 'alice', '@tutor When does the library open?');
      await s.idle();
      const first = s.llm.chatRequests()[requests]?.body as unknown as ChatBody;
      assert.ok(
        first.tools?.some((t) => t.function.name === 'rag_search_documents'),
        'the knowledge tool is offered',
      );
      const results = toolMessages(requests);
      assert.equal(results.length, 1);
      assert.match(results[0]!, /Found \d+ relevant document chunk\(s\) for: "library opening hours weekdays"/);
      assert.match(results[0]!, /\*\*Source 1:\*\* \/Course\/handbook\.pdf \(chunk \d+\) \[relevance: 0\.\d\d\]/);
      assert.match(results[0]!, /library opens at 7:45 and closes at 16:30/);
      const replies = s
        .bot(room)
        .slice(before)
        .map((m) => m.message)
        .join('\n');
      assert.match(replies, /The library opens at 7:45 on weekdays\./);
    });

    it('a document posted in the room is indexed for the bot and found with room_search_documents', async () => {
      s.h.nc.dav.files.putFile(
        'alice',
        'Talk/minutes.txt',
        'Meeting minutes: the field trip to the observatory is on 12 May; the bus leaves at 8:15.',
        'text/plain',
      );
      const requests = s.llm.chatRequests().length;
      s.llm.enqueue(
        { toolCalls: [{ name: 'room_search_documents', arguments: '{"query":"field trip observatory bus"}' }] },
        { text: ['The bus leaves at 8:15.'] },
      );
      await share('Talk/minutes.txt', '@tutor when does the bus leave?');
      await s.idle();
      const docs = await rows('room_documents');
      assert.deepEqual(
        docs.map((d) => [d.name, d.status]),
        [['minutes.txt', 'ready']],
      );
      const results = toolMessages(requests);
      assert.equal(results.length, 1);
      assert.match(results[0]!, /\*\*Source 1:\*\* minutes\.txt/);
      assert.match(results[0]!, /the bus leaves at 8:15/);
      // Room documents are not the bot's knowledge base.
      assert.equal(await s.h.application.knowledge.index.countItems({ kind: 'bot', botId: bot.id }, 'rdoc:' + docs[0]!.id), 0);
    });

    it('an image is described once, reused for the same bytes, and found with room_search_images', async () => {
      const png = await sharp({ create: { width: 24, height: 12, channels: 3, background: '#2266aa' } })
        .png()
        .toBuffer();
      s.h.nc.dav.files.putFile('alice', 'Talk/queue-chart.png', png, 'image/png');
      s.h.nc.dav.files.putFile('alice', 'Talk/queue-chart-copy.png', png, 'image/png');
      s.llm.enqueue({ text: ['Thanks, noted.'] }, { text: ['Noted again.'] });
      await share('Talk/queue-chart.png', '@tutor here is the canteen chart');
      await s.idle();
      await waitFor(async () => (await rows('room_images')).every((r) => r.status !== 'pending'), 'the image to be described', 30_000);
      await share('Talk/queue-chart-copy.png', '@tutor the same chart again');
      await s.idle();
      await waitFor(
        async () => (await rows('room_images')).length === 2 && (await rows('room_images')).every((r) => r.status === 'ready'),
        'both images indexed',
        30_000,
      );
      assert.equal(fake.visionCalls.length, 1, 'the same image is described only once');

      const requests = s.llm.chatRequests().length;
      s.llm.enqueue(
        { toolCalls: [{ name: 'room_search_images', arguments: '{"query":"canteen queue chart","image_name":"queue-chart.png"}' }] },
        { text: ['The queue peaks at 12:10.'] },
      );
      await s.say(room, 'alice', '@tutor when is the canteen queue longest?');
      await s.idle();
      const results = toolMessages(requests);
      assert.equal(results.length, 1);
      assert.match(results[0]!, /\*\*Image 1:\*\* queue-chart/);
      assert.ok(results[0]!.includes('Queue at noon'), results[0]);
      assert.match(s.bot(room).at(-1)?.message ?? '', /12:10/);
    });

    it('a deleted message takes its room document with it (S21)', async () => {
      // A room where the bot answers mentions only: the deletion still reaches the worker.
      const always = s.groupRoom('Mentions only');
      await s.onboard(always, bot, 'A');
      s.h.nc.dav.files.putFile('alice', 'Talk/draft.txt', 'Draft: the exam moves to Friday.', 'text/plain');
      s.h.nc.dav.files.putFile('alice', 'Talk/final.txt', 'Final: the exam stays on Thursday.', 'text/plain');
      s.llm.enqueue({ text: ['Got the draft.'] }, { text: ['Got the final version.'] });
      const draft = await share('Talk/draft.txt', `@${bot.mention} please keep this draft`, always);
      await s.idle();
      await share('Talk/final.txt', `@${bot.mention} and the final version`, always);
      await s.idle();
      await waitFor(async () => (await rows('room_documents', always)).filter((d) => d.status === 'ready').length === 2, 'both documents indexed', 30_000);
      // Alice deletes her message; Talk posts the system message and delivers it to the bot.
      await s.h.application.nextcloud
        .as(issueForStoredPrincipal('alice'))
        .ocs('DELETE', '/ocs/v2.php/apps/spreed/api/v1/chat/{token}/{id}', { params: { token: always, id: draft.id } });
      const system = s.h.nc.room(always).messages.at(-1)!;
      assert.equal(system.systemMessage, 'message_deleted');
      const delivered = await s.deliver(s.h.nc.webhookBodyFor(system));
      assert.equal(delivered.json.status, 'accepted');
      await s.idle();
      const left = await rows('room_documents', always);
      assert.deepEqual(
        left.map((d) => d.name),
        ['final.txt'],
        'the deleted message’s document is gone, the other stays',
      );
      const k = s.h.application.knowledge;
      const hits = await k.index.search(
        { kind: 'room-doc', botId: bot.id, roomToken: always },
        'fake-embed',
        new Float32Array(fake.dimensions).fill(1 / Math.sqrt(fake.dimensions)),
        { limit: 20, minScore: -1 },
      );
      assert.deepEqual([...new Set(hits.hits.map((h) => h.meta.name))], ['final.txt'], 'its vectors went too');
    });

    it('a voice-only message is transcribed first, read as its author by file id', async () => {
      const voiceRoom = s.groupRoom('Voice notes');
      await s.onboard(voiceRoom, bot, 'B');
      s.h.nc.dav.files.putFile('alice', 'Talk/Voice message 1.wav', Buffer.from([82, 73, 70, 70, 0, 1, 2, 3, 250, 251, 252, 253]), 'audio/wav');
      const requests = s.llm.chatRequests().length;
      s.llm.enqueue({ toolCalls: [{ name: 'attachment_transcribe_audio', arguments: '{}' }] }, { text: ['You asked about the homework.'] });
      await share('Talk/Voice message 1.wav', '{file}', voiceRoom, { messageType: 'voice-message' });
      await s.idle();
      const first = s.llm.chatRequests()[requests]?.body as unknown as { tool_choice?: { function?: { name?: string } } };
      assert.equal(first.tool_choice?.function?.name, 'attachment_transcribe_audio', 'the first model call is told to transcribe');
      const results = toolMessages(requests);
      assert.equal(results.length, 1);
      assert.equal(
        results[0],
        'Transcript for Voice message 1.wav:\n\ntranscribed Voice message 1.wav (12 bytes)',
        'the audio reached the speech endpoint byte for byte',
      );
      assert.equal(fake.transcriptionCalls.length, 1);
      assert.match(s.bot(voiceRoom).at(-1)?.message ?? '', /homework/);
    });

    it('RESET removes the room’s documents and image descriptions for the bot, not its knowledge base', async () => {
      assert.ok((await rows('room_documents')).length > 0);
      assert.ok((await rows('room_images')).length > 0);
      await s.say(room, 'alice', '((RESET)) @tutor');
      await s.idle();
      assert.match(s.bot(room).at(-1)?.message ?? '', /has been reset/);
      assert.deepEqual(await rows('room_documents'), []);
      assert.deepEqual(await rows('room_images'), []);
      const k = s.h.application.knowledge;
      assert.deepEqual(await k.rooms.modelsIn('doc', bot.id, room), []);
      assert.deepEqual(await k.rooms.modelsIn('image', bot.id, room), []);
      assert.ok((await k.index.counts({ kind: 'bot', botId: bot.id })).length > 0, 'the bot’s own sources stay');
    });

    it('deleting the bot removes its sources and vectors', async () => {
      const k = s.h.application.knowledge;
      assert.ok((await k.sources.list(bot.id)).length > 0);
      const removed = await api('alice', 'DELETE', `/api/v1/bots/${bot.id}`);
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(await k.sources.list(bot.id), []);
      assert.deepEqual(await k.index.counts({ kind: 'bot', botId: bot.id }), []);
    });
  });
}
