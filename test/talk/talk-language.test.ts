// Fixed Talk texts follow the Nextcloud language of the person a turn answers (read as that
// person, `cloud/user`); guests and unknown languages get English. Model answers are untouched.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { progressLine } from '../../lib/agent/agent-loop.ts';
import { talkLanguageOf, withTalkLanguage } from '../../lib/l10n/talk-language.ts';
import { DIALECTS } from '../helpers/databases.ts';
import { startTalkScenario, type TalkScenario } from '../helpers/talk-scenario.ts';

describe('progress lines', () => {
  it("name the tools in the turn's language", () => {
    assert.equal(progressLine(['search_docs']), '🔧 Using tool: search_docs…');
    assert.equal(
      withTalkLanguage('de', () => progressLine(['search_docs', 'read_file', 'search_docs'])),
      '🔧 Verwende Werkzeuge: search_docs, read_file…',
    );
  });
});

describe('talkLanguageOf', () => {
  it("maps Nextcloud's codes to the languages we write, English otherwise", () => {
    assert.equal(talkLanguageOf('de'), 'de');
    assert.equal(talkLanguageOf('de_DE'), 'de');
    assert.equal(talkLanguageOf('de-CH'), 'de');
    assert.equal(talkLanguageOf('en_GB'), 'en');
    assert.equal(talkLanguageOf('fr'), 'en');
    assert.equal(talkLanguageOf(''), 'en');
    assert.equal(talkLanguageOf(null), 'en');
  });
});

for (const dialect of DIALECTS) {
  describe(`Talk texts in the author's language on ${dialect}`, () => {
    let s: TalkScenario;
    before(async () => {
      s = await startTalkScenario({ dialect });
      s.h.nc.addUser({ id: 'jonas', displayName: 'Jonas', groups: ['educai-students'], language: 'de_DE' });
    });
    after(async () => s.close());

    it('onboards a German-speaking user in German, and the next English speaker in English', async () => {
      await s.createBot({ mention: 'lehrer', displayName: 'Lehrer' });
      const room = s.groupRoom('Klasse 7b');
      s.h.nc.addParticipant(room, { actorId: 'jonas', participantType: 3 });
      await s.say(room, 'jonas', '@lehrer');
      await s.idle();
      const intro = s.bot(room).at(-1)!.message;
      assert.match(intro, /^Hallo, hier ist \*\*Lehrer\*\*\. Wann soll ich in dieser Unterhaltung antworten\?/);
      assert.match(intro, /Bitte mit \*\*A\*\* oder \*\*B\*\* antworten\. Mit `\(\(RESET\)\)` lässt sich jederzeit neu beginnen\./);
      await s.say(room, 'jonas', 'vielleicht');
      await s.idle();
      assert.match(s.bot(room).at(-1)!.message, /^Bitte mit \*\*A\*\* \(Antwort nur, wenn jemand [@＠]lehrer erwähnt\)/);
      await s.say(room, 'jonas', 'A');
      await s.idle();
      assert.match(
        s.bot(room).at(-1)!.message,
        /^Danke, \*\*Lehrer\*\* ist eingerichtet\. Für Fragen einfach [@＠]lehrer erwähnen\. Mit `\(\(RESET\)\)` lässt sich jederzeit neu beginnen\.$/,
      );

      // Alice's Nextcloud speaks English: the same bot answers her fixed texts in English.
      await s.say(room, 'alice', '((RESET)) @lehrer');
      await s.idle();
      assert.match(s.bot(room).at(-1)!.message, /^Chat with \*\*[@＠]lehrer\*\* has been reset\. Mention the bot again to start fresh\.$/);
    });

    it("writes errors and limits in the author's language, and leaves the model's answer alone", async () => {
      const bot = await s.createBot({ mention: 'helfer', displayName: 'Helfer' });
      const room = s.groupRoom('Gruppe');
      s.h.nc.addParticipant(room, { actorId: 'jonas', participantType: 3 });
      await s.onboard(room, bot, 'A', 'jonas');
      s.llm.enqueue({ text: ['Photosynthesis turns light into sugar.'] });
      await s.say(room, 'jonas', '@helfer Was ist Photosynthese?');
      await s.idle();
      assert.equal(s.bot(room).at(-1)!.message, 'Photosynthesis turns light into sugar.', 'the model text is posted as it came');
      // The provider is down (the fallback model too): the apology is German.
      s.llm.enqueue({ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 });
      await s.say(room, 'jonas', '@helfer Und Zellatmung?');
      await s.idle();
      assert.equal(s.bot(room).at(-1)!.message, 'Der KI-Dienst ist gerade nicht verfügbar. Bitte später noch einmal versuchen.');
    });
  });
}
