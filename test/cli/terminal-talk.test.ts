// The Talk ends of `make chat` (lib/cli/terminal-talk.ts): what a typed line becomes, and what is printed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatForTerminal, TerminalTalk } from '../../lib/cli/terminal-talk.ts';
import { issueForStoredPrincipal } from '../../lib/nextcloud/identity.ts';
import type { RoomInfo } from '../../lib/talk/room-info.ts';
import { SHARED_ROUTE } from '../../lib/talk/talk-identities.ts';

describe('TerminalTalk', () => {
  it('turns a typed line into the event and the verified message Talk would have given', async () => {
    const talk = new TerminalTalk({ uid: 'alice', roomToken: null, print: () => undefined });
    const event = talk.message('@tutor hello {not a placeholder}');
    assert.equal(event.roomToken, talk.roomToken);
    assert.match(talk.roomToken, /^[A-Za-z0-9]{9,64}$/, 'a valid token longer than any Talk token');
    assert.equal(event.route, SHARED_ROUTE);
    assert.equal(event.payload.type, 'Create', 'a message, so it may confirm (S7)');
    const verify = talk.seams.verifier!.verify;
    const verified = await verify(event.roomToken, event.messageId, event.actorId, null);
    assert.ok(verified.ok);
    assert.equal(verified.message.rawText, '@tutor hello {not a placeholder}');
    assert.equal(verified.message.actor.rawId, 'users/alice');
    assert.equal(verified.message.kind, 'chat');
    assert.equal(verified.author?.uid, 'alice');
    assert.equal(verified.author?.source, 'operator');
    assert.deepEqual(await verify(event.roomToken, event.messageId, event.actorId, null), { ok: false, reason: 'not-found' }, 'a line is read once');
    const other = talk.message('hi');
    assert.equal((await verify(other.roomToken, other.messageId, 'users/bob', null)).ok, false, 'only the session user');
    assert.notEqual(other.messageId, event.messageId);
  });

  it('gives its own room as a one-to-one room of the user and asks Talk about real ones', async () => {
    const asked: string[] = [];
    const talkRooms = { forUser: async (_user: unknown, token: string) => (asked.push(token), null) } as unknown as RoomInfo;
    const virtual = new TerminalTalk({ uid: 'alice', roomToken: null, print: () => undefined });
    const rooms = virtual.seams.rooms!(talkRooms);
    const own = await rooms.forUser(issueForStoredPrincipal('alice'), virtual.roomToken);
    assert.equal(own?.oneToOne, true);
    assert.equal(await rooms.forUser(issueForStoredPrincipal('bob'), virtual.roomToken), null, 'nobody else is in it');
    assert.equal(await rooms.forUser(issueForStoredPrincipal('alice'), 'abcd1234'), null);
    assert.deepEqual(asked, [virtual.roomToken, 'abcd1234']);
    const real = new TerminalTalk({ uid: 'alice', roomToken: 'abcd1234', print: () => undefined });
    assert.equal(real.virtual, false);
    await real.seams.rooms!(talkRooms).forUser(issueForStoredPrincipal('alice'), 'abcd1234');
    assert.equal(asked.at(-1), 'abcd1234', 'a real room is as Talk says (S5)');
  });

  it('prints what would be posted, keeps the reply log in memory, and stays quiet when asked', async () => {
    const lines: string[] = [];
    const talk = new TerminalTalk({ uid: 'alice', roomToken: null, reviewMode: true, print: (text) => lines.push(text) });
    const seams = talk.seams;
    assert.equal(seams.reviewMode, true);
    await seams.sender!.send(SHARED_ROUTE, talk.roomToken, { message: 'one', replyTo: 1, referenceId: 'r1' });
    await talk.quietly(() => seams.sender!.send(SHARED_ROUTE, talk.roomToken, { message: 'two', replyTo: null, referenceId: 'r2' }));
    assert.deepEqual(lines, ['one']);
    await seams.replyLog!.intend(7, 0, 'r1', 'one');
    await seams.replyLog!.posted(7, 0);
    assert.deepEqual(await seams.replyLog!.list(7), [{ seq: 0, referenceId: 'r1', text: 'one', posted: true }]);
    await seams.replyLog!.drop(7, 0);
    assert.deepEqual(await seams.replyLog!.list(7), []);
  });
});

describe('formatForTerminal', () => {
  it("starts with the identity's name and indents continuation lines", () => {
    assert.equal(formatForTerminal('Talk AI', 'First line\nsecond\n\nthird'), 'Talk AI: First line\n  second\n\n  third\n');
    assert.equal(formatForTerminal('Tutor', 'one'), 'Tutor: one\n');
  });
});
