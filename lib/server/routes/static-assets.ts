import { join } from 'node:path';
import express, { Router } from 'express';
import { requireUser } from '../middleware/access.ts';

/** What Nextcloud loads from the ExApp through AppAPI's proxy (USER routes in info.xml). */
export function staticAssetRoutes(exAppDir: string): Router {
  const router = Router();
  for (const dir of ['js', 'css', 'img', 'l10n']) {
    router.use(
      `/${dir}`,
      requireUser(),
      express.static(join(exAppDir, dir), {
        fallthrough: true,
        index: false,
        dotfiles: 'deny',
        setHeaders: (res) => {
          res.setHeader('X-Content-Type-Options', 'nosniff');
          // Chunk names carry content hashes; the entry is loaded with ?v=<version>.
          res.setHeader('Cache-Control', 'private, max-age=3600');
        },
      }),
    );
  }
  return router;
}
