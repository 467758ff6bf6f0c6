import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_AFFIRMATIVES, DEFAULT_NEGATIVES, parseConfirmationReply } from '../../lib/confirmations/confirmation-reply.ts';
import { parseTalkWebhook } from '../../lib/talk/webhook-schema.ts';
import { parseWebhookMessage } from '../../lib/talk/message-parser.ts';
import { webhookBodies } from '../helpers/fixtures.ts';

const opts = { affirmatives: [...DEFAULT_AFFIRMATIVES], negatives: [...DEFAULT_NEGATIVES] };

function reply(text: string) {
  return parseConfirmationReply(text, opts);
}

describe('parseConfirmationReply', () => {
  it('accepts yes with a 4-8 digit code, in several languages and cases', () => {
    for (const word of ['yes', 'YES', 'Yes!', 'ok', 'okay', 'confirm', 'ja', 'oui', 'sí', 'si', 'Sí.', 'OK,']) {
      assert.deepEqual(reply(`${word} 4821`), { answer: 'yes', code: '4821' }, word);
    }
    assert.deepEqual(reply('yes 12345678'), { answer: 'yes', code: '12345678' });
    assert.deepEqual(reply('4821 yes'), { answer: 'yes', code: '4821' });
    assert.deepEqual(reply('yes #4821.'), { answer: 'yes', code: '4821' });
    assert.deepEqual(reply('**yes** 4821'), { answer: 'yes', code: '4821' });
    assert.deepEqual(reply('  yes\n4821  '), { answer: 'yes', code: '4821' });
  });

  it('folds accents and width, so "si" = "sí" and full-width digits count', () => {
    assert.deepEqual(reply('BESTATIGEN 4821'), { answer: 'yes', code: '4821' });
    assert.deepEqual(reply('yes ４８２１'), { answer: 'yes', code: '4821' });
  });

  it('refuses yes without a valid code', () => {
    for (const text of ['yes', 'yes 482', 'yes 123456789', 'yes 48a1', 'yes 48 21', 'ok please']) {
      assert.equal(reply(text), null, text);
    }
  });

  it('accepts no with or without a code', () => {
    assert.deepEqual(reply('no'), { answer: 'no', code: null });
    assert.deepEqual(reply('Nein!'), { answer: 'no', code: null });
    assert.deepEqual(reply('cancel 4821'), { answer: 'no', code: '4821' });
    assert.deepEqual(reply('non'), { answer: 'no', code: null });
  });

  it('skips bot mention tokens', () => {
    assert.deepEqual(reply('@tutor yes 4821'), { answer: 'yes', code: '4821' });
    assert.deepEqual(reply('/tutor, no'), { answer: 'no', code: null });
    assert.deepEqual(reply('yes 4821 @tutor @math'), { answer: 'yes', code: '4821' });
    assert.equal(reply('@a @b @c @d yes 4821'), null);
    assert.equal(reply('@tutor'), null);
  });

  it('never counts {mention-user} placeholders as the answer', () => {
    assert.equal(reply('{mention-user1} 4821'), null);
    assert.equal(reply('{mention-user1}'), null);
    assert.equal(reply('yes {mention-user1} 4821'), null);
  });

  it('a user named "yes" confirms nothing: the raw webhook text holds a placeholder', () => {
    const [body] = webhookBodies('61-talk-webhook-mention.json');
    const content = JSON.stringify({ message: '{mention-user1} 4821', parameters: { 'mention-user1': { type: 'user', id: 'yes', name: 'yes' } } });
    const forged = structuredClone(body) as { object: { content: string } };
    forged.object.content = content;
    const result = parseTalkWebhook(forged);
    if (!result.ok) assert.fail(result.detail);
    const message = parseWebhookMessage(result.event);
    assert.equal(message?.text, '@yes 4821');
    assert.equal(reply(message?.rawText ?? ''), null);
  });

  it('refuses longer or different replies', () => {
    for (const text of [
      '',
      '   ',
      'yes no 4821',
      'yes yes 4821',
      'yes 4821 4822',
      'yes 4821 please',
      'yes, go ahead 4821',
      'maybe 4821',
      'I said yes 4821',
      'yes\u00a04821 x',
      `yes 4821 ${'@tutor '.repeat(40)}`,
      'y 4821',
      'https://x/yes 4821',
    ]) {
      assert.equal(reply(text), null, text);
    }
  });

  it('uses the word lists it is given', () => {
    const custom = { affirmatives: ['Jo'], negatives: ['Nö'] };
    assert.deepEqual(parseConfirmationReply('jo 1234', custom), { answer: 'yes', code: '1234' });
    assert.deepEqual(parseConfirmationReply('NO', custom), { answer: 'no', code: null });
    assert.equal(parseConfirmationReply('yes 1234', custom), null);
    assert.equal(parseConfirmationReply('yes 1234', { affirmatives: [], negatives: [] }), null);
    // A word in both lists is ambiguous.
    assert.equal(parseConfirmationReply('ok 1234', { affirmatives: ['ok'], negatives: ['OK'] }), null);
    // Entries with spaces cannot match a single word.
    assert.equal(parseConfirmationReply('go 1234', { affirmatives: ['go ahead'], negatives: [] }), null);
  });

  it('default lists are lowercase single words and do not overlap', () => {
    for (const w of [...DEFAULT_AFFIRMATIVES, ...DEFAULT_NEGATIVES]) {
      assert.equal(w, w.toLowerCase());
      assert.doesNotMatch(w, /\s/);
    }
    const yes = new Set(DEFAULT_AFFIRMATIVES);
    for (const w of DEFAULT_NEGATIVES) assert.equal(yes.has(w), false, w);
  });
});
