// The browser link to a conversation, moved from room-bots and the confirmation notification into
// lib/nextcloud/talk.ts (issue 21): the same link whether the base URL ends in /index.php or a slash.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { talkCallUrl } from '../../lib/nextcloud/talk.ts';

describe('talkCallUrl', () => {
  it('gives one link for every spelling of the base URL', () => {
    const token = 'abc123de';
    const links = ['https://cloud.example', 'https://cloud.example/', 'https://cloud.example/index.php', 'https://cloud.example/index.php/'].map((baseUrl) =>
      talkCallUrl({ baseUrl }, token),
    );
    assert.equal(new Set(links).size, 1);
    const url = new URL(links[0] ?? '');
    assert.equal(url.origin, 'https://cloud.example');
    assert.equal(url.pathname.split('/').at(-1), token);
  });

  it('keeps a token one path segment', () => {
    const link = talkCallUrl({ baseUrl: 'https://cloud.example' }, 'a/b?c');
    const url = new URL(link);
    assert.equal(url.search, '');
    assert.equal(decodeURIComponent(url.pathname.split('/').at(-1) ?? ''), 'a/b?c');
  });
});
