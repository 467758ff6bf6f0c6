import { basename, join } from 'node:path';
import express, { Router } from 'express';
import { requireUser } from '../middleware/access.ts';

const HASHED = /-[0-9a-f]{12}\.(js|css)$/;

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
        setHeaders: (res, path) => {
          res.setHeader('X-Content-Type-Options', 'nosniff');
          // The bundles' names carry their content hash (ex_app/vite.config.ts), so they never change;
          // anything else (icons, the manifest, l10n) is revalidated.
          res.setHeader('Cache-Control', HASHED.test(basename(path)) ? 'private, max-age=31536000, immutable' : 'private, no-cache');
        },
      }),
    );
  }
  return router;
}
