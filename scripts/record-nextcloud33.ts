// Records the exchanges the product depends on from a real Nextcloud 33 into test/fixtures/nextcloud33/
// (what each file holds: that folder's README). Run against a server of ../shared/nextcloud/:
//   eval "$(../shared/nextcloud/setup.sh /tmp/nc 8091 | grep ^export)"
//   node scripts/record-nextcloud33.ts [outDir]
// It registers a recording ExApp `educai` (unregistering any other), installs and removes a second,
// direct Talk bot, and leaves rooms, files, a board and a collective behind.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { readManifest } from '../lib/appapi/manifest.ts';
import { recordAppApi } from './record-nextcloud33/appapi.ts';
import { recordCollectives, recordDeck } from './record-nextcloud33/apps.ts';
import { Context } from './record-nextcloud33/context.ts';
import { recordFiles } from './record-nextcloud33/files.ts';
import { recordTalk } from './record-nextcloud33/talk.ts';

const manifest = readManifest(fileURLToPath(new URL('../appinfo/info.xml', import.meta.url)));
const outDir = process.argv[2] ?? fileURLToPath(new URL('../test/fixtures/nextcloud33/', import.meta.url));
const only = new Set((process.env.RECORD_ONLY ?? 'appapi,talk,files,deck,collectives').split(','));
const ctx = new Context(outDir, randomBytes(32).toString('base64url'), manifest.version);
await ctx.start();
try {
  const { botSecret } = await recordAppApi(ctx, manifest);
  if (only.has('talk')) await recordTalk(ctx, botSecret);
  if (only.has('files')) await recordFiles(ctx);
  if (only.has('deck')) await recordDeck(ctx);
  if (only.has('collectives')) await recordCollectives(ctx);
} finally {
  await ctx.nc.occ('app_api:app:unregister', 'educai', '--force').catch(() => '');
  await ctx.close();
}
