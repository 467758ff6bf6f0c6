// The fake Deck against the Deck 1.17 capture of board, stack and label writes
// (test/fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json): every captured request is
// replayed in order against the fake, with the captured ids mapped to the fake's, and the fake
// must answer with the same status, the same error message and the same keys and values.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { NextcloudClient } from '../../../lib/nextcloud/client.ts';
import { NextcloudError } from '../../../lib/nextcloud/errors.ts';
import { issueFromConfirmedTalkAuthor } from '../../../lib/nextcloud/identity.ts';
import type { CapturedExchange } from './fixtures.ts';
import { FakeNextcloud } from './server.ts';

const SECRET = 'fake-deck-117-secret-0123456789';
const CAPTURE = JSON.parse(readFileSync(new URL('../../fixtures/nextcloud33/deck-1.17-boards-stacks-labels.json', import.meta.url), 'utf8')) as Record<
  string,
  CapturedExchange
>;
const API = '/index.php/apps/deck/api/v1.0';
type Kind = 'boards' | 'stacks' | 'cards' | 'labels';
type Json = Record<string, unknown>;

function userOf(x: CapturedExchange): string {
  const m = /^Basic base64\("([a-z]+):/.exec(x.request.headers['Authorization'] ?? '');
  assert.ok(m, 'the capture names its user');
  return m[1] ?? '';
}

function parse(body: string): unknown {
  return body === '' ? null : (JSON.parse(body) as unknown);
}

function keys(v: unknown): string[] {
  return Object.keys(v as object)
    .filter((k) => k !== 'cards')
    .sort();
}

describe('the fake Deck against Deck 1.17 (boards, stacks, labels)', () => {
  let nc: FakeNextcloud;
  let client: NextcloudClient;
  before(async () => {
    nc = await FakeNextcloud.start({ appId: 'educai', appSecret: SECRET });
    nc.deck.version = '1.17.4';
    client = new NextcloudClient({ baseUrl: nc.url, appId: 'educai', appVersion: '1.0.0', appSecret: SECRET });
  });
  after(async () => nc.close());

  it('replays every captured step with the captured status, message, keys and values', async () => {
    const ids: Record<Kind, Map<number, number>> = { boards: new Map(), stacks: new Map(), cards: new Map(), labels: new Map() };
    // Alice's other board on the real server (Deck's welcome board), the target of the stack moved by its URL.
    const welcome = nc.deck.createBoard('alice', 'Welcome to Nextcloud Deck!');
    ids.boards.set(1, welcome.id);
    const created = new Set(
      Object.entries(CAPTURE)
        .filter(([step]) => step.startsWith('createStack'))
        .map(([, x]) => (parse(x.response.body) as Json | null)?.['id']),
    );
    for (const s of parse(CAPTURE['stacksOfOtherBoardAfterCrossUrl']?.response.body ?? '[]') as Json[]) {
      if (!created.has(s['id'])) nc.deck.addStack(welcome.id, String(s['title']), Number(s['order']));
    }
    const map = (kind: Kind, captured: number): number => {
      const id = ids[kind].get(captured);
      assert.ok(id !== undefined, `captured ${kind} ${captured} has a fake counterpart`);
      return id;
    };
    let ourBoard = 0;
    for (const [step, x] of Object.entries(CAPTURE)) {
      const path = new URL(x.request.url).pathname
        .slice(API.length)
        .replace(/\/(boards|stacks|cards|labels)\/(\d+)/g, (_all, kind: Kind, id: string) => `/${kind}/${map(kind, Number(id))}`);
      const body = x.request.body ? (JSON.parse(x.request.body) as Json) : undefined;
      if (body && typeof body['labelId'] === 'number') body['labelId'] = map('labels', body['labelId']);
      const session = client.as(issueFromConfirmedTalkAuthor(userOf(x)));
      let status = 200;
      let got: unknown = null;
      let message = '';
      try {
        got = await session.rest<unknown>(x.request.method, `${API}${path}`, body !== undefined ? { body } : {});
      } catch (err) {
        assert.ok(err instanceof NextcloudError, `${step}: ${String(err)}`);
        status = err.status;
        message = err.message;
      }
      assert.equal(status, x.response.status, `${step}: status`);
      const want = parse(x.response.body);
      if (status !== 200) {
        if (want !== null) assert.ok(message.endsWith((want as Json)['message'] as string), `${step}: "${message}" ends with the captured message`);
        else assert.match(message, /not JSON|HTTP 400|Bad Request|^[A-Z]+ \S+: ?$/, `${step}: a bare 400`);
        continue;
      }
      // Learn the ids the fake gave what the capture created.
      if (x.request.method === 'POST') {
        const kind = (/\/(boards|stacks|cards|labels|acl)$/.exec(path)?.[1] ?? '') as Kind | 'acl';
        if (kind !== 'acl') ids[kind].set((want as Json)['id'] as number, (got as Json)['id'] as number);
        if (kind === 'boards') {
          ourBoard = (got as Json)['id'] as number;
          const fakeLabels = (got as { labels: Json[] }).labels;
          for (const l of (want as { labels: Json[] }).labels)
            ids.labels.set(l['id'] as number, fakeLabels.find((f) => f['title'] === l['title'])?.['id'] as number);
        }
      }
      if (Array.isArray(want)) {
        assert.ok(Array.isArray(got), `${step}: a list`);
        if (/^\/boards$/.test(path)) {
          // The real server lists boards of earlier runs too: compare our board only.
          const mine = want.find((b) => ids.boards.get((b as Json)['id'] as number) === ourBoard) as Json;
          const fake = got.find((b) => (b as Json)['id'] === ourBoard) as Json;
          assert.deepEqual(keys(fake), keys(mine), `${step}: board keys`);
          assert.equal(fake['archived'], mine['archived'], `${step}: archived`);
        } else {
          assert.deepEqual(
            got.map((s) => [(s as Json)['title'], (s as Json)['order']]),
            want.map((s) => [(s as Json)['title'], (s as Json)['order']]),
            `${step}: stacks in order`,
          );
          assert.deepEqual(keys(got[0]), keys(want[0]), `${step}: stack keys`);
        }
        continue;
      }
      const w = want as Json;
      const g = got as Json;
      // Cards and label assignments follow Deck 1.13's card shapes in the fake (capture 90); only their outcome is compared here.
      if (/\/cards/.test(path)) {
        if (step === 'getCardAfterLabelDelete') assert.deepEqual(g['labels'], w['labels'], `${step}: the deleted label came off the card`);
        continue;
      }
      assert.deepEqual(keys(g), keys(w), `${step}: keys`);
      for (const k of ['title', 'color', 'archived', 'order', 'lastModified', 'cardId', 'permissionEdit', 'permissionManage']) {
        if (!(k in w)) continue;
        if (k === 'lastModified') assert.equal(g[k] === 0 || g[k] === null, w[k] === 0 || w[k] === null, `${step}: lastModified set or not`);
        else assert.deepEqual(g[k], w[k], `${step}: ${k}`);
      }
      if ('boardId' in w) assert.equal(g['boardId'], map('boards', w['boardId'] as number), `${step}: boardId`);
      if (Array.isArray(w['labels']))
        assert.deepEqual(
          (g['labels'] as Json[]).map((l) => l['title']),
          (w['labels'] as Json[]).map((l) => l['title']),
          `${step}: labels`,
        );
      if (Array.isArray(w['stacks']))
        assert.deepEqual(
          (g['stacks'] as Json[]).map((s) => s['title']),
          (w['stacks'] as Json[]).map((s) => s['title']),
          `${step}: stacks`,
        );
    }
    assert.ok(ourBoard > 0, 'the board was created');
    assert.deepEqual(nc.headerViolations, []);
  });
});
