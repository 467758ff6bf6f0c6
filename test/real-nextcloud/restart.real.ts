// SIGKILL of the ExApp in the middle of an answer in the real Talk 21, then a restart: the answer is completed,
// and no chunk that Talk already shows is posted again. On both database dialects.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS } from '../helpers/databases.ts';
import { waitFor } from '../helpers/harness.ts';
import { startStack, unique, type Stack } from './stack.ts';

for (const dialect of DIALECTS) {
  describe(`a crash mid-answer on the real Nextcloud 33 (${dialect})`, () => {
    let s: Stack;
    before(async () => {
      s = await startStack({ dialect });
    });
    after(async () => s?.stop());

    it('finishes the answer after a restart, without repeating a posted chunk', async () => {
      const mention = unique('tutor').replace(/-/g, '_');
      await s.createBot('alice', mention);
      const token = await s.room('alice', ['bob']);
      await s.onboard('alice', token, mention);
      // The first paragraph arrives, then the stream stalls: the process dies with the answer half posted.
      s.llm.enqueue({
        text: ['First paragraph.\n\n', 'Second', ' paragraph', ' that', ' never', ' arrives', ' before', ' the', ' crash.'],
        tokensPerSecond: 1,
      });
      const question = await s.nc.post('alice', token, `@${mention} tell me two things`);
      const answered = async () => (await s.nc.botMessages('alice', token)).filter((m) => m.id > question.id);
      await waitFor(async () => (await answered()).length === 1, 'the first chunk in Talk', 30_000);
      await s.app.kill('SIGKILL');
      assert.deepEqual(
        (await answered()).map((m) => m.message),
        ['First paragraph.'],
      );

      s.llm.enqueue({ text: ['Second paragraph, continued.'] });
      await s.app.start();
      await waitFor(async () => (await answered()).length >= 2, 'the resumed answer in Talk', 60_000);
      await s.idle();
      assert.deepEqual(
        (await answered()).map((m) => m.message),
        ['First paragraph.', 'Second paragraph, continued.'],
      );
      const resumed = s.llm.lastChatBody().messages as Array<{ role: string; content: string }>;
      assert.match(resumed[0]!.content, /interrupted[\s\S]*First paragraph\./i, 'the model continues after what Talk already shows');
    });
  });
}
