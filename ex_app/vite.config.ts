// Builds the app page as one classic-script IIFE bundle (AppAPI loads it with a
// plain <script defer>, contract §4, trap 1) into ex_app/js and ex_app/css, with
// content-hashed names written to js/educai-manifest.json for the UI registrar.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import vue from '@vitejs/plugin-vue';
import { defineConfig, type Plugin } from 'vite';

const here = new URL('.', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(here, '..', 'package.json'), 'utf8')) as { version: string };

/** AppAPI's proxy lets browsers cache JS and CSS for an hour [87], so the names carry the content's hash. */
function hashedNames(): Plugin {
  return {
    name: 'educai-hashed-names',
    buildStart() {
      for (const dir of ['js', 'css']) {
        let names: string[] = [];
        try {
          names = readdirSync(join(here, dir));
        } catch {
          continue;
        }
        for (const n of names) if (/^educai-(main|style)[.-]/.test(n) || n === 'educai-manifest.json') rmSync(join(here, dir, n));
      }
    },
    // Rolldown does not let plugins rename bundle entries, so the written files are renamed.
    writeBundle() {
      const manifest: { script: string; style: string | null } = { script: '', style: null };
      for (const [dir, base, ext, key] of [
        ['js', 'educai-main', '.js', 'script'],
        ['css', 'educai-style', '.css', 'style'],
      ] as const) {
        const from = join(here, dir, base + ext);
        if (!existsSync(from)) continue;
        const hash = createHash('sha256').update(readFileSync(from)).digest('hex').slice(0, 12);
        renameSync(from, join(here, dir, `${base}-${hash}${ext}`));
        manifest[key] = `${dir}/${base}-${hash}`;
      }
      if (!manifest.script) throw new Error('the build wrote no js/educai-main.js');
      writeFileSync(join(here, 'js', 'educai-manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    },
  };
}

export default defineConfig({
  root: join(here, 'src'),
  plugins: [vue(), hashedNames()],
  define: {
    // @nextcloud/vue reads these globals (trap 2).
    appName: JSON.stringify('educai'),
    appVersion: JSON.stringify(pkg.version),
    'process.env.NODE_ENV': JSON.stringify('production'),
  },
  build: {
    outDir: here,
    emptyOutDir: false,
    sourcemap: false,
    lib: { entry: join(here, 'src', 'main.ts'), name: 'EducaiMain', formats: ['iife'], fileName: () => 'js/educai-main.js', cssFileName: 'css/educai-style' },
  },
});
