// Registration, init, enable and disable against the real AppAPI 33 and Talk 21.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../helpers/harness.ts';
import { exAppListing, startStack, talkBotNames, type Stack } from './stack.ts';

describe('the ExApp lifecycle on the real Nextcloud 33', () => {
  let s: Stack;
  before(async () => {
    s = await startStack();
  });
  after(async () => s?.stop());

  it('registers through manual_install, reports init progress up to 100 and is enabled', async () => {
    assert.match((await exAppListing(s.nc)) ?? '', /\[enabled\]/);
    const init = s.log().map((l) => JSON.parse(l) as { msg?: string });
    assert.ok(
      init.some((l) => l.msg === 'init finished, reporting 100'),
      'init reported 100',
    );
    // AppAPI's own record of the ExApp, read as the ExApp itself: enabled, status done.
    const state = await s.nc.request(null, 'GET', '/ocs/v1.php/apps/app_api/ex-app/state?format=json', {
      headers: { ...s.appApiHeaders(''), 'OCS-APIRequest': 'true' },
    });
    assert.equal(state.status, 200, state.text);
    assert.equal(state.data.ocs.data, 1, 'AppAPI reports the ExApp enabled (an integer, test/fixtures/nextcloud33/appapi-ex-app-state.json)');
  });

  it('registers its Talk bot on enable, removes it on disable and brings it back on enable', async () => {
    assert.ok((await talkBotNames(s.nc)).includes('Talk AI'), 'the shared Talk bot is registered');
    await s.nc.occ('app_api:app:disable', 'educai');
    assert.match((await exAppListing(s.nc)) ?? '', /\[disabled\]/);
    await waitFor(async () => !(await talkBotNames(s.nc)).includes('Talk AI'), 'the Talk bot to be unregistered', 20_000);
    await s.nc.occ('app_api:app:enable', 'educai');
    await waitFor(async () => (await talkBotNames(s.nc)).includes('Talk AI'), 'the Talk bot to be registered again', 20_000);
    assert.match((await exAppListing(s.nc)) ?? '', /\[enabled\]/);
  });

  it('can be enabled in a room by its moderator, and answers there', async () => {
    const token = await s.nc.createRoom('alice', `lifecycle-${Date.now()}`, ['bob']);
    const offered = await s.nc.roomBots('alice', token);
    const talkAi = offered.find((b) => b.name === 'Talk AI');
    assert.ok(talkAi, `Talk offers "Talk AI" in the room: ${JSON.stringify(offered)}`);
    assert.equal(talkAi.state, 0, 'not enabled before the moderator enables it');
    // bob is a plain participant: Talk refuses him.
    const refused = await s.nc.ocs('bob', 'POST', `/apps/spreed/api/v1/bot/${token}/${talkAi.id}`);
    assert.ok(refused.status === 403 || refused.status === 401, `bob may not enable bots: ${refused.status}`);
    await s.nc.enableBot('alice', token);
    assert.equal((await s.nc.roomBots('alice', token)).find((b) => b.name === 'Talk AI')?.state, 1);
    const bot = await s.createBot('alice', `life${Date.now().toString(36)}`);
    const question = await s.ask('alice', token, `@${bot.mention}`);
    assert.equal(question.length, 1, 'one onboarding question');
    assert.match(question[0]!.message, /\bA\b[\s\S]*\bB\b/);
  });
});
