import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseResetCommand } from '../../lib/router/reset-command.ts';

describe('parseResetCommand', () => {
  it('recognises the marker alone, in any case, after trimming', () => {
    for (const text of ['((RESET))', '((reset))', '  ((Reset))  ', '\n((RESET))\n']) {
      assert.deepEqual(parseResetCommand(text), { mention: null }, JSON.stringify(text));
    }
  });

  it('reads one following @bot or /bot, lowercased', () => {
    assert.deepEqual(parseResetCommand('((RESET)) @tutor'), { mention: 'tutor' });
    assert.deepEqual(parseResetCommand('((RESET)) /Tutor'), { mention: 'tutor' });
    assert.deepEqual(parseResetCommand('((RESET))@Math-Bot'), { mention: 'math-bot' });
    assert.deepEqual(parseResetCommand('((reset))   @tutor please'), { mention: 'tutor' });
    assert.deepEqual(parseResetCommand('((RESET)) @tutor.'), { mention: 'tutor' });
    assert.deepEqual(parseResetCommand('((RESET))\n@tutor'), { mention: 'tutor' });
    assert.deepEqual(parseResetCommand('((RESET)) @tutor @math'), { mention: 'tutor' });
  });

  it('treats other text after the marker as a reset of every bot', () => {
    assert.deepEqual(parseResetCommand('((RESET)) please'), { mention: null });
    assert.deepEqual(parseResetCommand('((RESET)) {mention-user1}'), { mention: null });
  });

  it('refuses a marker followed by something mention-like that is not a clean mention', () => {
    for (const text of ['((RESET)) @tutor.org', '((RESET)) /tutor/x', '((RESET)) @', '((RESET)) @' + 'a'.repeat(101), '((RESET)) @tutor@x']) {
      assert.equal(parseResetCommand(text), null, text);
    }
  });

  it('ignores text that does not start with the marker', () => {
    for (const text of ['', 'RESET', '(RESET)', '((RESET)', 'please ((RESET))', '@tutor ((RESET))', '(( RESET ))', '((RESETS))']) {
      assert.equal(parseResetCommand(text), null, text);
    }
  });
});
