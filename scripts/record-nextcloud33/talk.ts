// Talk 21: rooms, the bot enabled in a room, every kind of webhook a room event makes (through
// AppAPI to the ExApp, and Talk's own request to a bot installed with occ), chat, reactions and the
// bot API.
import { randomBytes } from 'node:crypto';
import { hmacHex, send, type Exchange } from './capture.ts';
import { type Context, type Steps } from './context.ts';

const SPREED = '/ocs/v2.php/apps/spreed/api';
const DIRECT_NAME = 'Capture direct bot';

interface Room {
  token: string;
}

async function step(ctx: Context, steps: Steps, name: string, run: () => Promise<{ exchange: Exchange }>): Promise<any> {
  const r = await run();
  steps[name] = r.exchange;
  return (r as { json?: any }).json?.ocs?.data ?? null;
}

/** One event: what was done, and what every bot got for it. */
async function event(ctx: Context, file: string, about: string, run: (steps: Steps) => Promise<void>): Promise<void> {
  ctx.exApp.drain();
  ctx.direct.drain();
  const steps: Steps = {};
  await run(steps);
  Object.assign(steps, await ctx.webhooks());
  ctx.write(file, { what: about }, steps);
}

async function uploadAsAlice(ctx: Context, name: string, content: Buffer, type: string): Promise<Exchange> {
  await ctx.appApiRaw('alice', 'MKCOL', '/remote.php/dav/files/alice/Talk');
  return (await ctx.appApiRaw('alice', 'PUT', `/remote.php/dav/files/alice/Talk/${name}`, { body: content, headers: { 'Content-Type': type } })).exchange;
}

/** A minimal valid WAV (8 kHz, 8 bit, 0.1 s of silence). */
function wav(): Buffer {
  const samples = 800;
  const b = Buffer.alloc(44 + samples, 0x80);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + samples, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(8000, 24);
  b.writeUInt32LE(8000, 28);
  b.writeUInt16LE(1, 32);
  b.writeUInt16LE(8, 34);
  b.write('data', 36);
  b.writeUInt32LE(samples, 40);
  return b;
}

export async function recordTalk(ctx: Context, botSecret: string): Promise<void> {
  // --- rooms and bots ---
  const rooms: Steps = {};
  const room = (await step(ctx, rooms, 'create-group-room', () =>
    ctx.asUser('alice', 'POST', `${SPREED}/v4/room`, { roomType: 2, roomName: 'Capture room' }),
  )) as Room;
  await step(ctx, rooms, 'add-bob', () =>
    ctx.asUser('alice', 'POST', `${SPREED}/v4/room/${room.token}/participants`, { newParticipant: 'bob', source: 'users' }),
  );
  await step(ctx, rooms, 'room-as-alice', () => ctx.asUser('alice', 'GET', `${SPREED}/v4/room/${room.token}`));
  await step(ctx, rooms, 'room-through-appapi-as-bob', () => ctx.appApi('bob', 'GET', `${SPREED}/v4/room/${room.token}`));
  await step(ctx, rooms, 'room-list-through-appapi-as-alice', () => ctx.appApi('alice', 'GET', `${SPREED}/v4/room`));
  await step(ctx, rooms, 'room-not-a-participant', () => ctx.appApi('admin', 'GET', `${SPREED}/v4/room/${room.token}`));
  await step(ctx, rooms, 'participants-as-alice', () => ctx.appApi('alice', 'GET', `${SPREED}/v4/room/${room.token}/participants`));
  const bots = (await step(ctx, rooms, 'room-bot-list', () => ctx.appApi('alice', 'GET', `${SPREED}/v1/bot/${room.token}`))) as Array<{
    id: number;
    name: string;
  }>;
  const talkBot = bots.find((b) => b.name === 'Talk AI');
  if (!talkBot) throw new Error('Talk offers no "Talk AI" bot in the room');
  await step(ctx, rooms, 'room-bot-enable-as-bob-not-moderator', () => ctx.appApi('bob', 'POST', `${SPREED}/v1/bot/${room.token}/${talkBot.id}`));
  ctx.write(
    'talk-21-rooms.json',
    { what: 'a group room of alice with bob; the room read as alice and through AppAPI; the bots a moderator may enable; a non-moderator enabling one' },
    rooms,
  );

  // The direct bot: Talk's own signed request to a URL of ours (no AppAPI in between).
  const directSecret = randomBytes(32).toString('hex');
  ctx.redactor.secret(directSecret, '<REDACTED_BOT_SECRET>');
  await ctx.nc.occ(
    'talk:bot:install',
    '-f',
    'webhook',
    '-f',
    'response',
    '-f',
    'reaction',
    DIRECT_NAME,
    directSecret,
    `http://127.0.0.1:${ctx.direct.port}/direct`,
    'Records what Talk sends',
  );
  const list = JSON.parse(await ctx.nc.occ('talk:bot:list', '--output=json')) as Array<{ id: number; name: string }>;
  const direct = list.find((b) => b.name === DIRECT_NAME);
  if (!direct) throw new Error('the direct bot was not installed');

  await event(
    ctx,
    'talk-21-webhook-bot-enabled-join.json',
    'the AppAPI bot enabled by the moderator (POST bot/{token}/{id}): the Join event; then the direct bot set up with occ talk:bot:setup',
    async (s) => {
      await step(ctx, s, 'enable-appapi-bot', () => ctx.appApi('alice', 'POST', `${SPREED}/v1/bot/${room.token}/${talkBot.id}`));
      await step(ctx, s, 'enable-appapi-bot-again', () => ctx.appApi('alice', 'POST', `${SPREED}/v1/bot/${room.token}/${talkBot.id}`));
      s['occ-setup-direct-bot'] = await ctx.occ('talk:bot:setup', String(direct.id), room.token);
    },
  );

  let aliceMessage = 0;
  await event(ctx, 'talk-21-webhook-message.json', 'alice posts a plain message: Create', async (s) => {
    const m = await step(ctx, s, 'alice-posts', () =>
      ctx.asUser('alice', 'POST', `${SPREED}/v1/chat/${room.token}`, { message: 'Hello Talk AI, what is 2 + 2?' }),
    );
    aliceMessage = Number(m.id);
  });
  let mentionMessage = 0;
  await event(ctx, 'talk-21-webhook-mention.json', 'alice mentions bob twice, the bot by name and @all', async (s) => {
    const m = await step(ctx, s, 'alice-posts-mentions', () =>
      ctx.asUser('alice', 'POST', `${SPREED}/v1/chat/${room.token}`, { message: 'Hi @bob and @"bob", ask @"Talk AI" about fractions. Also @all.' }),
    );
    mentionMessage = Number(m.id);
  });
  await event(ctx, 'talk-21-webhook-reply.json', 'bob replies (replyTo) to alice: Create with inReplyTo', async (s) => {
    await step(ctx, s, 'bob-replies', () =>
      ctx.asUser('bob', 'POST', `${SPREED}/v1/chat/${room.token}`, { message: 'Replying to alice', replyTo: aliceMessage }),
    );
  });
  await event(ctx, 'talk-21-webhook-edit.json', 'alice edits her message (PUT chat/{token}/{id})', async (s) => {
    await step(ctx, s, 'alice-edits', () =>
      ctx.asUser('alice', 'PUT', `${SPREED}/v1/chat/${room.token}/${aliceMessage}`, { message: 'Hello Talk AI, what is 3 + 3?' }),
    );
  });
  await event(ctx, 'talk-21-webhook-delete.json', 'alice deletes her mention message (DELETE chat/{token}/{id})', async (s) => {
    await step(ctx, s, 'alice-deletes', () => ctx.asUser('alice', 'DELETE', `${SPREED}/v1/chat/${room.token}/${mentionMessage}`));
  });
  await event(ctx, 'talk-21-webhook-file-share.json', 'alice shares a file into the room (share type 10) with a caption', async (s) => {
    s['upload'] = await uploadAsAlice(ctx, 'notes.txt', Buffer.from('Notes for the capture\n'), 'text/plain');
    await step(ctx, s, 'share-into-room', () =>
      ctx.asUser('alice', 'POST', '/ocs/v2.php/apps/files_sharing/api/v1/shares', {
        path: '/Talk/notes.txt',
        shareType: 10,
        shareWith: room.token,
        talkMetaData: JSON.stringify({ caption: 'Here are my notes' }),
      }),
    );
  });
  await event(ctx, 'talk-21-webhook-file-share-no-caption.json', 'alice shares a file into the room without a caption', async (s) => {
    s['upload'] = await uploadAsAlice(ctx, 'plain.txt', Buffer.from('plain\n'), 'text/plain');
    await step(ctx, s, 'share-into-room', () =>
      ctx.asUser('alice', 'POST', '/ocs/v2.php/apps/files_sharing/api/v1/shares', { path: '/Talk/plain.txt', shareType: 10, shareWith: room.token }),
    );
  });
  await event(ctx, 'talk-21-webhook-voice-message.json', 'alice sends a voice message (.wav shared with talkMetaData messageType voice-message)', async (s) => {
    s['upload'] = await uploadAsAlice(ctx, 'voice.wav', wav(), 'audio/wav');
    await step(ctx, s, 'share-voice-message', () =>
      ctx.asUser('alice', 'POST', '/ocs/v2.php/apps/files_sharing/api/v1/shares', {
        path: '/Talk/voice.wav',
        shareType: 10,
        shareWith: room.token,
        talkMetaData: JSON.stringify({ messageType: 'voice-message' }),
      }),
    );
  });

  // Reactions: the AppAPI bot first as AppAPI registers it (webhook, response), then with `reaction`.
  await event(
    ctx,
    'talk-21-webhook-reaction-without-feature.json',
    'bob reacts to alice while the AppAPI bot has only webhook, response; the direct bot has reaction',
    async (s) => {
      await step(ctx, s, 'bob-reacts', () => ctx.asUser('bob', 'POST', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`, { reaction: '👍' }));
      await step(ctx, s, 'bob-unreacts', () => ctx.asUser('bob', 'DELETE', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`, { reaction: '👍' }));
    },
  );
  await ctx.nc.occ('talk:bot:state', '-f', 'webhook', '-f', 'response', '-f', 'reaction', String(talkBot.id), '1');
  await event(
    ctx,
    'talk-21-webhook-reaction.json',
    'after occ talk:bot:state <id> 1 -f webhook -f response -f reaction: bob reacts 👍 to alice (Like), then removes it (Undo)',
    async (s) => {
      await step(ctx, s, 'bob-reacts', () => ctx.asUser('bob', 'POST', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`, { reaction: '👍' }));
      await step(ctx, s, 'bob-unreacts', () => ctx.asUser('bob', 'DELETE', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`, { reaction: '👍' }));
    },
  );
  await ctx.nc.occ('talk:bot:state', '-f', 'webhook', '-f', 'response', String(talkBot.id), '1');

  const participants = (await ctx.appApi('alice', 'GET', `${SPREED}/v4/room/${room.token}/participants`)).json?.ocs?.data as Array<{
    actorId: string;
    attendeeId: number;
  }>;
  const bobAttendee = participants.find((p) => p.actorId === 'bob')?.attendeeId;
  await event(ctx, 'talk-21-webhook-user-removed-added.json', 'alice removes bob (DELETE attendees), then adds him back', async (s) => {
    await step(ctx, s, 'remove-bob', () => ctx.asUser('alice', 'DELETE', `${SPREED}/v4/room/${room.token}/attendees`, { attendeeId: bobAttendee }));
    await step(ctx, s, 'add-bob', () =>
      ctx.asUser('alice', 'POST', `${SPREED}/v4/room/${room.token}/participants`, { newParticipant: 'bob', source: 'users' }),
    );
  });
  await event(ctx, 'talk-21-webhook-bob-leaves.json', 'bob leaves the room himself (DELETE participants/self)', async (s) => {
    await step(ctx, s, 'bob-leaves', () => ctx.asUser('bob', 'DELETE', `${SPREED}/v4/room/${room.token}/participants/self`));
    await step(ctx, s, 'alice-adds-bob-back', () =>
      ctx.asUser('alice', 'POST', `${SPREED}/v4/room/${room.token}/participants`, { newParticipant: 'bob', source: 'users' }),
    );
  });
  await event(
    ctx,
    'talk-21-webhook-session-join-leave-call.json',
    'bob joins the room (session, keeping its cookie), starts a call and leaves it, then leaves the session',
    async (s) => {
      const join = await ctx.asUser('bob', 'POST', `${SPREED}/v4/room/${room.token}/participants/active`, {});
      s['bob-joins-session'] = join.exchange;
      const cookie = { Cookie: join.cookies.join('; ') };
      await step(ctx, s, 'bob-joins-call', () => ctx.asUser('bob', 'POST', `${SPREED}/v4/call/${room.token}`, { flags: 3 }, cookie));
      await step(ctx, s, 'bob-leaves-call', () => ctx.asUser('bob', 'DELETE', `${SPREED}/v4/call/${room.token}`, undefined, cookie));
      await step(ctx, s, 'bob-leaves-session', () => ctx.asUser('bob', 'DELETE', `${SPREED}/v4/room/${room.token}/participants/active`, undefined, cookie));
    },
  );
  await event(
    ctx,
    'talk-21-webhook-bot-disabled-leave.json',
    'the moderator disables the AppAPI bot (Leave), a message while it is off, then enables it again (Join)',
    async (s) => {
      await step(ctx, s, 'disable-appapi-bot', () => ctx.appApi('alice', 'DELETE', `${SPREED}/v1/bot/${room.token}/${talkBot.id}`));
      await step(ctx, s, 'alice-posts-while-off', () => ctx.asUser('alice', 'POST', `${SPREED}/v1/chat/${room.token}`, { message: 'Nobody listening?' }));
      await step(ctx, s, 'enable-appapi-bot', () => ctx.appApi('alice', 'POST', `${SPREED}/v1/bot/${room.token}/${talkBot.id}`));
    },
  );
  await event(ctx, 'talk-21-webhook-room-renamed.json', 'alice renames the room', async (s) => {
    await step(ctx, s, 'rename', () => ctx.asUser('alice', 'PUT', `${SPREED}/v4/room/${room.token}`, { roomName: 'Capture room (renamed)' }));
  });

  // --- the bot API and the chat ---
  const bot: Steps = {};
  const sign = async (name: string, method: string, path: string, signed: string, body: Record<string, unknown>, secret = botSecret) => {
    const random = randomBytes(32).toString('hex');
    const r = await ctx.appApiRaw('', method, path, {
      headers: {
        'X-Nextcloud-Talk-Bot-Random': random,
        'X-Nextcloud-Talk-Bot-Signature': hmacHex(secret, random + signed),
        'Content-Type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    // The bot endpoints are public: the AppAPI headers are not part of the capture.
    for (const h of ['EX-APP-ID', 'EX-APP-VERSION', 'AUTHORIZATION-APP-API']) delete r.exchange.request.headers[h];
    bot[name] = ctx.resignBotRequest(r.exchange, signed);
    return r;
  };
  const referenceId = randomBytes(32).toString('hex');
  await sign('bot-message', 'POST', `${SPREED}/v1/bot/${room.token}/message`, 'The answer is 6.', {
    message: 'The answer is 6.',
    referenceId,
    replyTo: aliceMessage,
  });
  await sign('bot-message-silent', 'POST', `${SPREED}/v1/bot/${room.token}/message`, 'Silent note', { message: 'Silent note', silent: true });
  await sign('bot-message-empty', 'POST', `${SPREED}/v1/bot/${room.token}/message`, '', { message: '' });
  await sign('bot-message-too-long', 'POST', `${SPREED}/v1/bot/${room.token}/message`, 'x'.repeat(32001), { message: 'x'.repeat(32001) });
  bot['bot-message-too-long'] = {
    ...(bot['bot-message-too-long'] as Exchange),
    request: { ...(bot['bot-message-too-long'] as Exchange).request, body: '{"message":"<32001 times x>"}' },
  };
  await sign(
    'bot-message-bad-signature',
    'POST',
    `${SPREED}/v1/bot/${room.token}/message`,
    'forged',
    { message: 'forged' },
    'a-wrong-secret-of-forty-characters-at-least-000',
  );
  await sign('bot-reaction', 'POST', `${SPREED}/v1/bot/${room.token}/reaction/${aliceMessage}`, '✅', { reaction: '✅' });
  await sign('bot-reaction-again', 'POST', `${SPREED}/v1/bot/${room.token}/reaction/${aliceMessage}`, '✅', { reaction: '✅' });
  await sign('bot-reaction-remove', 'DELETE', `${SPREED}/v1/bot/${room.token}/reaction/${aliceMessage}`, '✅', { reaction: '✅' });
  await sign('bot-reaction-unknown-message', 'POST', `${SPREED}/v1/bot/${room.token}/reaction/999999`, '✅', { reaction: '✅' });
  bot['webhooks-after-bot-calls'] = await ctx.webhooks();
  bot['alice-reacts'] = (await ctx.asUser('alice', 'POST', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`, { reaction: '🎉' })).exchange;
  bot['chat-as-alice'] = (
    await ctx.appApi('alice', 'GET', `${SPREED}/v1/chat/${room.token}?lookIntoFuture=0&limit=50&setReadMarker=0&markNotificationsAsRead=0`)
  ).exchange;
  bot['chat-one-message-context'] = (await ctx.appApi('alice', 'GET', `${SPREED}/v1/chat/${room.token}/${aliceMessage}/context?limit=2`)).exchange;
  bot['reactions-as-alice'] = (await ctx.appApi('alice', 'GET', `${SPREED}/v1/reaction/${room.token}/${aliceMessage}`)).exchange;
  bot['chat-as-nobody'] = (await ctx.appApi('', 'GET', `${SPREED}/v1/chat/${room.token}?lookIntoFuture=0&limit=5`)).exchange;
  const chat = (await ctx.appApi('alice', 'GET', `${SPREED}/v1/chat/${room.token}?lookIntoFuture=0&limit=10&setReadMarker=0`)).json?.ocs?.data as Array<{
    id: number;
    actorType: string;
    referenceId: string;
  }>;
  const botPost = chat.find((m) => m.actorType === 'bots' && m.referenceId === referenceId);
  if (botPost) {
    bot['moderator-edits-bot-message'] = (
      await ctx.appApi('alice', 'PUT', `${SPREED}/v1/chat/${room.token}/${botPost.id}`, { message: 'The answer is 6 (edited by alice).' })
    ).exchange;
  }
  Object.assign(bot, { 'webhooks-after-chat': await ctx.webhooks() });
  ctx.write(
    'talk-21-chat-and-bot-api.json',
    {
      what: 'the bot API signed with the bot secret (message with referenceId and replyTo, silent, empty, 32001 chars, bad signature; reactions), the webhooks those produce, the chat and reactions read as alice through AppAPI, a moderator editing the bot message',
      signatures:
        'X-Nextcloud-Talk-Bot-Signature re-computed with the capture test secret over random + message (or reaction): hmac_sha256(CAPTURE_TEST_SECRET, random + signed)',
    },
    bot,
  );

  // --- one-to-one ---
  await event(ctx, 'talk-21-webhook-one-to-one.json', 'alice opens a one-to-one room with bob, enables the bot and posts', async (s) => {
    const one = (await step(ctx, s, 'create-one-to-one', () => ctx.asUser('alice', 'POST', `${SPREED}/v4/room`, { roomType: 1, invite: 'bob' }))) as Room;
    await step(ctx, s, 'room-as-alice', () => ctx.appApi('alice', 'GET', `${SPREED}/v4/room/${one.token}`));
    await step(ctx, s, 'enable-appapi-bot', () => ctx.appApi('alice', 'POST', `${SPREED}/v1/bot/${one.token}/${talkBot.id}`));
    s['occ-setup-direct-bot'] = await ctx.occ('talk:bot:setup', String(direct.id), one.token);
    await step(ctx, s, 'alice-posts', () => ctx.asUser('alice', 'POST', `${SPREED}/v1/chat/${one.token}`, { message: 'Just between us' }));
  });
  // --- a guest in a public room (a cookie session, no account) ---
  await event(
    ctx,
    'talk-21-webhook-guest.json',
    'alice opens a public room with the bots; a guest joins (cookie session), sets a name, posts and leaves',
    async (s) => {
      const pub = (await step(ctx, s, 'create-public-room', () =>
        ctx.asUser('alice', 'POST', `${SPREED}/v4/room`, { roomType: 3, roomName: 'Capture public room' }),
      )) as Room;
      await step(ctx, s, 'enable-appapi-bot', () => ctx.appApi('alice', 'POST', `${SPREED}/v1/bot/${pub.token}/${talkBot.id}`));
      s['occ-setup-direct-bot'] = await ctx.occ('talk:bot:setup', String(direct.id), pub.token);
      const jar = new Map<string, string>();
      const guest = async (name: string, method: string, path: string, body?: unknown) => {
        const headers: Record<string, string> = { 'OCS-APIRequest': 'true', Accept: 'application/json', 'Content-Type': 'application/json' };
        if (jar.size > 0) headers['Cookie'] = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
        const r = await send(ctx.redactor, method, `${ctx.nc.url}${path}`, { headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
        for (const c of r.cookies) {
          const eq = c.indexOf('=');
          if (eq > 0) jar.set(c.slice(0, eq), c.slice(eq + 1));
        }
        s[name] = r.exchange;
      };
      await guest('guest-joins', 'POST', `${SPREED}/v4/room/${pub.token}/participants/active`, {});
      await guest('guest-sets-name', 'POST', `${SPREED}/v1/guest/${pub.token}/name`, { displayName: 'Gina Guest' });
      await guest('guest-posts', 'POST', `${SPREED}/v1/chat/${pub.token}`, { message: 'Hello from a guest' });
      await guest('guest-leaves', 'DELETE', `${SPREED}/v4/room/${pub.token}/participants/active`);
    },
  );
  await ctx.nc.occ('talk:bot:uninstall', String(direct.id)).catch(() => '');
}
