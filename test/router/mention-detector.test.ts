import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { findBotMentions, isValidMention, listMentionTokens, stripMention } from '../../lib/talk/mention-detector.ts';
import { parseTalkWebhook } from '../../lib/talk/webhook-schema.ts';
import { parseWebhookMessage } from '../../lib/talk/message-parser.ts';
import { webhookBodies } from '../helpers/fixtures.ts';

const known = new Set(['tutor', 'math-bot', 'helper_2']);

function names(text: string, mentions: ReadonlySet<string> = known): string[] {
  return findBotMentions(text, mentions).map((m) => m.mention);
}

describe('findBotMentions', () => {
  it('finds @ and / mentions as whole tokens, case-insensitively', () => {
    assert.deepEqual(names('@tutor what is 2+2?'), ['tutor']);
    assert.deepEqual(names('what is 2+2 @tutor'), ['tutor']);
    assert.deepEqual(names('Hey @TUTOR help'), ['tutor']);
    assert.deepEqual(names('@Math-Bot and @helper_2'), ['math-bot', 'helper_2']);
    assert.deepEqual(names('/tutor explain fractions'), ['tutor']);
    assert.deepEqual(names('please /Tutor explain'), ['tutor']);
    assert.deepEqual(names('line one\n/tutor on a new line'), ['tutor']);
    assert.deepEqual(names('\t@tutor'), ['tutor']);
  });

  it('reports index and length of the token without punctuation', () => {
    const text = 'Hi @Tutor, and /math-bot?';
    assert.deepEqual(findBotMentions(text, known), [
      { mention: 'tutor', index: 3, length: 6 },
      { mention: 'math-bot', index: 15, length: 9 },
    ]);
    assert.equal(text.slice(3, 3 + 6), '@Tutor');
  });

  it('accepts trailing punctuation and brackets', () => {
    for (const text of [
      '@tutor,',
      '@tutor?',
      '@tutor!',
      '@tutor.',
      '@tutor:',
      '@tutor;',
      '(@tutor)',
      '(@tutor).',
      '"@tutor"',
      '**@tutor**',
      '@tutor?! now',
      '/tutor, go',
      '[@tutor]',
      '@tutor…',
    ]) {
      assert.deepEqual(names(text), ['tutor'], text);
    }
  });

  it('ignores mentions inside URLs', () => {
    for (const text of [
      'https://x/y/@tutor',
      'http://x/tutor',
      'see https://example.org/@tutor?x=1 please',
      'https://example.org/path/tutor',
      'https://example.org/?u=@tutor',
      'http://tutor.example.org/',
      'mailto:@tutor',
    ]) {
      assert.deepEqual(names(text), [], text);
    }
  });

  it('ignores e-mail addresses and paths', () => {
    for (const text of [
      'me@tutor.org',
      'write to me@tutor',
      '@tutor.org is a domain',
      'docs/tutor',
      '~/tutor',
      './tutor',
      '/tutor/notes.md',
      '/home/tutor',
      'C:\\tutor',
      '@tutor/sub',
      '@tutor@host',
      '@@tutor',
      '/tutor:8080',
    ]) {
      assert.deepEqual(names(text), [], text);
    }
  });

  it('ignores longer or different names', () => {
    assert.deepEqual(names('@tutorial @tutors @tuto @tutor2 @my-tutor'), []);
    assert.deepEqual(names("@tutor's answer"), []);
    assert.deepEqual(names('@tutorä'), []);
  });

  it('only lets / count at the start or after whitespace', () => {
    assert.deepEqual(names('a/tutor'), []);
    assert.deepEqual(names('(/tutor)'), []);
    assert.deepEqual(names('"/tutor"'), []);
    assert.deepEqual(names('x /tutor'), ['tutor']);
  });

  it('finds two bots in order of appearance, each once', () => {
    assert.deepEqual(names('@math-bot then @tutor and @math-bot again, /tutor too'), ['math-bot', 'tutor']);
    const matches = findBotMentions('/tutor @tutor', known);
    assert.equal(matches.length, 1);
    assert.equal(matches[0]?.index, 0);
  });

  it('runs on raw text, so a person rendered as @tutor never triggers the bot', () => {
    const [body] = webhookBodies('61-talk-webhook-mention.json');
    const result = parseTalkWebhook(body);
    if (!result.ok) assert.fail(result.detail);
    const message = parseWebhookMessage(result.event);
    assert.ok(message);
    // Alice mentioned bob; suppose a bot were called "bob".
    const bots = new Set(['bob', 'all', 'educai']);
    assert.ok(message.text.includes('@Bob'));
    assert.deepEqual(names(message.rawText, bots), ['all']);
    // The Talk bot's own quoted name is not an app-level mention.
    assert.deepEqual(names(message.rawText, new Set(['educai'])), []);
  });

  it('returns nothing without known mentions or text', () => {
    assert.deepEqual(names('@tutor', new Set()), []);
    assert.deepEqual(names(''), []);
    assert.deepEqual(names('@ / @/ //'), []);
  });

  it('ignores names over 100 characters', () => {
    const long = 'a'.repeat(101);
    assert.deepEqual(names(`@${long}`, new Set([long])), []);
    const max = 'a'.repeat(100);
    assert.deepEqual(names(`@${max}`, new Set([max])), [max]);
  });

  it('scans long input to the end', () => {
    const text = `${'@x/y@z '.repeat(8000)} @tutor`;
    assert.deepEqual(names(text), ['tutor']);
  });
});

describe('listMentionTokens', () => {
  it('lists every well-formed token, known or not, repeats included', () => {
    assert.deepEqual(
      listMentionTokens('@a hi /b me@c @a').map((t) => t.mention),
      ['a', 'b', 'a'],
    );
  });
});

describe('stripMention', () => {
  it('removes the mention and tidies spaces', () => {
    const cases: Array<[string, string]> = [
      ['@tutor what is 2+2?', 'what is 2+2?'],
      ['what is 2+2 @tutor', 'what is 2+2'],
      ['what is it @tutor?', 'what is it?'],
      ['Hey @tutor, explain', 'Hey, explain'],
      ['@tutor, explain', 'explain'],
      ['@Tutor: explain', 'explain'],
      ['/tutor explain', 'explain'],
      ['a @tutor b', 'a b'],
      ['@tutor @tutor twice /tutor', 'twice'],
      ['  @tutor  ', ''],
      ['line1\n@tutor\nline2', 'line1\n\nline2'],
    ];
    for (const [input, expected] of cases) assert.equal(stripMention(input, 'tutor'), expected, input);
  });

  it('leaves other bots, URLs, e-mail addresses and code indentation alone', () => {
    assert.equal(stripMention('@tutor ask @math-bot', 'tutor'), 'ask @math-bot');
    assert.equal(stripMention('@tutor see https://x/y/@tutor', 'tutor'), 'see https://x/y/@tutor');
    assert.equal(stripMention('mail me@tutor.org @tutor', 'tutor'), 'mail me@tutor.org');
    assert.equal(stripMention('@tutor fix:\n    if (a)  {\n        b();\n    }', 'tutor'), 'fix:\n    if (a)  {\n        b();\n    }');
    assert.equal(stripMention('@tutorial', 'tutor'), '@tutorial');
  });

  it('accepts the mention in any case', () => {
    assert.equal(stripMention('@TUTOR hi', 'Tutor'), 'hi');
  });
});

describe('isValidMention', () => {
  it('accepts lowercase letters, digits, _ and - up to 100 characters after lowercasing', () => {
    for (const s of ['tutor', 'Tutor', 'math-bot', 'helper_2', '7', 'a'.repeat(100)]) assert.equal(isValidMention(s), true, s);
  });

  it('refuses everything else', () => {
    for (const s of ['', 'a'.repeat(101), 'tu tor', '@tutor', '/tutor', 'tutor.', 'tütor', 'tutor\n', 'a/b']) {
      assert.equal(isValidMention(s), false, JSON.stringify(s));
    }
  });
});
