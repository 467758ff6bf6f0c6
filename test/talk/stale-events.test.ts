import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { STALE_REPLY } from '../../lib/pipeline/event-processor.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

describe('events that waited too long', () => {
  let s: TalkScenario;
  let skew = 0;
  before(async () => {
    s = await startTalkScenario({ dialect: 'sqlite', build: { now: () => Date.now() + skew, maxEventAgeMs: 10 * 60_000 } });
  });
  after(async () => s.close());

  it('get a short apology instead of a stale answer', async () => {
    const bot = await s.createBot({ mention: 'late' });
    const room = s.groupRoom();
    await s.onboard(room, bot, 'A');
    const calls = s.llm.chatRequests().length;
    await s.h.application.worker.stop();
    const msg = await s.say(room, 'alice', '@late what happened an hour ago?');
    skew = 11 * 60_000;
    await s.h.application.worker.start();
    await s.idle();
    assert.equal(s.llm.chatRequests().length, calls, 'the model did not run');
    const last = s.bot(room).at(-1)!;
    assert.equal(last.message, STALE_REPLY);
    assert.equal(last.replyTo, msg.id);
  });
});
