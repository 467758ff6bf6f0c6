import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import { createInvocationContext, type InvocationAttachment, type ToolResult } from '../../lib/tools/tool-provider.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';
import { FakeKnowledgeEndpoints } from '../fakes/openai/fake-knowledge-endpoints.ts';
import { knowledgeOn } from './helpers/knowledge-harness.ts';
import { MemoryFiles } from './helpers/memory-files.ts';

const alice = issueForStoredPrincipal('alice');
const text = (r: ToolResult) => r.content.map((c) => ('text' in c ? String(c.text ?? '') : '')).join('');

function ctx(roomToken: string, attachments: InvocationAttachment[] = [], user = alice, botId = 'bot-r') {
  return createInvocationContext({ user, actorKind: 'user', botId, roomToken, messageId: '55', attachments });
}

for (const dialect of DIALECTS) {
  describe(`room documents and images on ${dialect}`, () => {
    let fake: FakeKnowledgeEndpoints;
    before(async () => {
      fake = await FakeKnowledgeEndpoints.start({
        dimensions: 64,
        describe: (prompt) =>
          /Filename: .*diagram/.test(prompt)
            ? 'A network diagram showing a router, a firewall and three servers.'
            : 'A photo of a red bicycle leaning on a wall.',
      });
    });
    after(() => fake.close());

    test('room documents are indexed per (bot, room), searched only there, and go on RESET', async () => {
      const tdb = await createTestDatabase(dialect);
      const files = new MemoryFiles();
      const checks: string[] = [];
      let stillShared = true;
      const k = await knowledgeOn(tdb, fake, files, {
        shareCheck: async (author, room, message, fileId) => {
          checks.push(`${author.uid}:${room}:${message}:${fileId}`);
          return stillShared;
        },
      });
      try {
        const minutes = files.file('alice', 'Talk/minutes.txt', 'Meeting minutes: the budget for the field trip is 300 euros.', 'text/plain');
        const other = files.file('alice', 'Talk/other.txt', 'Secret of room Y: the password hint is blue.', 'text/plain');
        const att = (id: string, name: string): InvocationAttachment => ({ fileId: id, name, mimeType: 'text/plain', kind: 'document' });
        const q = await k.rooms.onMessage({
          botId: 'bot-r',
          roomToken: 'roomX',
          messageId: '55',
          author: alice,
          attachments: [{ ...att(minutes, 'minutes.txt'), size: 60 }],
          documents: true,
          images: true,
        });
        assert.equal(q.docs.length, 1);
        await k.rooms.onMessage({
          botId: 'bot-r',
          roomToken: 'roomY',
          messageId: '56',
          author: alice,
          attachments: [{ ...att(other, 'other.txt'), size: 60 }],
          documents: true,
          images: true,
        });
        await k.rooms.onMessage({
          botId: 'bot-other',
          roomToken: 'roomX',
          messageId: '57',
          author: alice,
          attachments: [{ ...att(other, 'other.txt'), size: 60 }],
          documents: true,
          images: true,
        });
        await k.worker.drain();
        assert.deepEqual(
          checks.sort(),
          ['alice:roomX:55:' + minutes, 'alice:roomX:57:' + other, 'alice:roomY:56:' + other].sort(),
          'each file was checked as shared in its room, as its author',
        );

        const x = text(
          await k.provider.executeTool('room_search_documents', { query: 'budget field trip', min_score: 0 }, {}, ctx('roomX', [att(minutes, 'minutes.txt')])),
        );
        assert.match(x, /\*\*Source 1:\*\* minutes\.txt \(chunk 0\)/);
        assert.doesNotMatch(x, /password hint/, 'room X never sees room Y, nor another bot in room X');
        const y = text(await k.provider.executeTool('room_search_documents', { query: 'password hint', min_score: 0 }, {}, ctx('roomY')));
        assert.match(y, /password hint is blue/);
        const botOnly = text(await k.provider.executeTool('rag_search_documents', { query: 'budget field trip', min_score: 0 }, {}, ctx('roomX')));
        assert.equal(botOnly, 'No documents have been indexed for this bot yet.', 'room documents are not bot knowledge');

        await k.forgetRoom('bot-r', 'roomX');
        const afterReset = text(await k.provider.executeTool('room_search_documents', { query: 'budget field trip', min_score: 0 }, {}, ctx('roomX')));
        assert.equal(afterReset, 'No documents have been shared with this bot in this conversation yet.');
        assert.match(
          text(await k.provider.executeTool('room_search_documents', { query: 'password hint', min_score: 0 }, {}, ctx('roomY'))),
          /blue/,
          'other rooms keep theirs',
        );
        assert.match(
          text(await k.provider.executeTool('room_search_documents', { query: 'password hint', min_score: 0 }, {}, ctx('roomX', [], alice, 'bot-other'))),
          /blue/,
          'other bots keep theirs',
        );

        // A file no longer shared in the room is not read at all (S15).
        stillShared = false;
        const late = files.file('alice', 'Talk/late.txt', 'Late document.', 'text/plain');
        await k.rooms.onMessage({
          botId: 'bot-r',
          roomToken: 'roomX',
          messageId: '60',
          author: alice,
          attachments: [{ ...att(late, 'late.txt'), size: 14 }],
          documents: true,
          images: false,
        });
        const readsBefore = files.reads.length;
        await k.worker.drain();
        assert.equal(files.reads.length, readsBefore);
        const [status] = await k.rooms.statusOf('doc', 'bot-r', 'roomX', [late]);
        assert.equal(status?.status, 'error');
        assert.match(status?.error ?? '', /no longer shared/);
      } finally {
        await k.close();
        await tdb.drop();
      }
    });

    test('image memory: described once per image, searchable by content and name, expires after retention', async () => {
      const tdb = await createTestDatabase(dialect);
      const files = new MemoryFiles();
      let clock = Date.UTC(2026, 0, 1);
      const k = await knowledgeOn(tdb, fake, files, { now: () => clock });
      try {
        const png = await sharp({ create: { width: 32, height: 16, channels: 3, background: '#aa0000' } })
          .png()
          .toBuffer();
        const tiff = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#00aa00' } })
          .tiff()
          .toBuffer();
        const d1 = files.file('alice', 'Talk/network-diagram.png', png, 'image/png');
        const d2 = files.file('alice', 'Talk/diagram-copy.png', png, 'image/png');
        const bike = files.file('alice', 'Talk/bike.tiff', tiff, 'image/tiff');
        const img = (id: string, name: string, mime: string) => ({ fileId: id, name, mimeType: mime, kind: 'image', size: 100 });
        const visionBefore = fake.visionCalls.length;
        await k.rooms.onMessage({
          botId: 'bot-i',
          roomToken: 'r1',
          messageId: '70',
          author: alice,
          attachments: [img(d1, 'network-diagram.png', 'image/png'), img(bike, 'bike.tiff', 'image/tiff')],
          documents: true,
          images: true,
        });
        await k.worker.drain();
        await k.rooms.onMessage({
          botId: 'bot-i',
          roomToken: 'r1',
          messageId: '71',
          author: alice,
          attachments: [img(d2, 'diagram-copy.png', 'image/png')],
          documents: true,
          images: true,
        });
        await k.worker.drain();
        const calls = fake.visionCalls.slice(visionBefore);
        assert.equal(calls.length, 2, 'the second copy of the same image reused its description');
        assert.ok(
          calls.some((c) => c.imageDataUrl.startsWith('data:image/png;base64,') && c.prompt.includes('Filename: bike.tiff')),
          'TIFF was transcoded to PNG',
        );

        const found = text(
          await k.provider.executeTool('room_search_images', { query: 'router firewall servers', min_score: 0.1 }, {}, ctx('r1', [], alice, 'bot-i')),
        );
        assert.match(found, /\*\*Image 1:\*\* (network-diagram|diagram-copy)\.png/);
        assert.match(found, /Talk message: 7[01] · uploaded by alice/);
        const named = text(
          await k.provider.executeTool(
            'room_search_images',
            { query: 'picture', image_name: 'bike.tiff', min_score: 0.1, limit: 1 },
            {},
            ctx('r1', [], alice, 'bot-i'),
          ),
        );
        assert.match(named, /\*\*Image 1:\*\* bike\.tiff/);
        assert.match(named, /red bicycle/);

        clock += 31 * 86_400_000;
        assert.equal(await k.rooms.prune(), 3);
        const gone = text(await k.provider.executeTool('room_search_images', { query: 'router firewall servers' }, {}, ctx('r1', [], alice, 'bot-i')));
        assert.equal(gone, 'No images have been indexed for this bot in this conversation yet.');
      } finally {
        await k.close();
        await tdb.drop();
      }
    });

    test('image analysis and transcription of the current message, read as the invoking user', async () => {
      const tdb = await createTestDatabase(dialect);
      const files = new MemoryFiles();
      const k = await knowledgeOn(tdb, fake, files);
      try {
        const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } })
          .png()
          .toBuffer();
        const photo = files.file('alice', 'Talk/diagram.png', png, 'image/png');
        const voice = files.file('alice', 'Talk/voice.wav', new Uint8Array(2000), 'audio/wav');
        const atts: InvocationAttachment[] = [
          { fileId: photo, name: 'diagram.png', mimeType: 'image/png', kind: 'image' },
          { fileId: voice, name: 'voice.wav', mimeType: 'audio/wav', kind: 'audio' },
        ];
        const analysis = await k.provider.executeTool('attachment_analyze_image', { question: 'What is shown?' }, {}, ctx('r', atts));
        assert.equal(analysis.isError, false);
        assert.match(text(analysis), /^Analysis of diagram\.png:\n\nA network diagram/);
        assert.match(fake.visionCalls.at(-1)!.prompt, /^What is shown\?/);
        const transcript = await k.provider.executeTool('attachment_transcribe_audio', {}, {}, ctx('r', atts));
        assert.equal(text(transcript), 'Transcript for voice.wav:\n\ntranscribed voice.wav (2000 bytes)');
        assert.equal(fake.transcriptionCalls.at(-1)?.model, 'fake-whisper');

        // bob cannot get alice's file by naming its id: it is read as bob.
        const bob = issueForStoredPrincipal('bob');
        const denied = await k.provider.executeTool('attachment_analyze_image', {}, {}, ctx('r', atts, bob));
        assert.equal(denied.isError, true);
        assert.match(text(denied), /not available to you/);
        const none = await k.provider.executeTool('attachment_analyze_image', { attachment_name: 'nope.png' }, {}, ctx('r', atts));
        assert.equal(none.isError, true);

        const guest = createInvocationContext({ user: null, actorKind: 'guest', botId: 'bot-r', roomToken: 'r' });
        assert.equal(
          (await k.provider.executeTool('rag_search_documents', { query: 'x' }, {}, guest)).isError,
          true,
          'no knowledge for guests unless the bot allows it',
        );
        const tools = (await k.provider.getTools(ctx('r'))).map((t) => t.name);
        assert.deepEqual(tools, [
          'rag_search_documents',
          'room_search_documents',
          'room_search_images',
          'attachment_analyze_image',
          'attachment_transcribe_audio',
        ]);
        const vt = await k.vision.test();
        assert.deepEqual([vt.ok, vt.status], [true, 200]);
        const st = await k.speech.test();
        assert.equal(st.ok, true);
      } finally {
        await k.close();
        await tdb.drop();
      }
    });
  });
}
