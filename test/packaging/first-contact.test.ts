// What a newcomer meets first (issue 20): `make run` builds the app page when it is missing or stale,
// the npm scripts are make's commands (Node 24 comes from make), and the licence is in the tree.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const root = new URL('../..', import.meta.url).pathname;

/** What `make -n` would run for `target`; `changed` files are taken as just edited (-W). */
function dryRun(target: string, changed: string[] = [], variables: string[] = []): string[] {
  const r = spawnSync('make', ['-n', ...changed.flatMap((f) => ['-W', f]), target, ...variables], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.split('\n').filter((l) => l.trim() !== '');
}

describe('first contact', () => {
  it('make run builds the frontend before it starts the app when a source changed', () => {
    for (const source of ['ex_app/src/main.ts', 'ex_app/src/App.vue', 'ex_app/vite.config.ts']) {
      const steps = dryRun('run', [source]);
      const build = steps.indexOf('npm run build:frontend');
      assert.ok(build >= 0, `${source}: ${steps.join(' | ')}`);
      assert.ok(build < steps.indexOf('node lib/cli/dev-run.ts'), steps.join(' | '));
    }
  });

  it('make run builds the frontend when a fresh clone has none', () => {
    const steps = dryRun('run', [], ['FRONTEND_MANIFEST=ex_app/js/not-built-yet.json']);
    assert.ok(steps.includes('npm run build:frontend'), steps.join(' | '));
  });

  it('every npm script is a make target or a step make itself runs', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const makefile = readFileSync(join(root, 'Makefile'), 'utf8');
    for (const [name, command] of Object.entries(pkg.scripts)) {
      const target = /^make (\w[\w-]*)$/.exec(command)?.[1];
      if (target) {
        assert.match(makefile, new RegExp(`^${target}:`, 'm'), `npm run ${name}: make has no target ${target}`);
        continue;
      }
      assert.ok(makefile.includes(`npm run ${name}`), `npm run ${name} (${command}) is neither make nor run by make`);
      assert.doesNotMatch(command, /^node\b/, `npm run ${name} would run the system Node`);
    }
    for (const name of ['start', 'test', 'bench']) assert.ok(pkg.scripts[name], `npm ${name} exists`);
  });

  it('ships the AGPL-3.0 text that README, package.json and info.xml name', () => {
    const license = readFileSync(join(root, 'LICENSE'), 'utf8');
    assert.match(license, /^\s*GNU AFFERO GENERAL PUBLIC LICENSE\n\s*Version 3, 19 November 2007\n/);
    assert.match(license, /END OF TERMS AND CONDITIONS/);
    assert.ok(license.length > 30_000, 'the full text, not a notice');
    assert.equal((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string }).license, 'AGPL-3.0-or-later');
    assert.match(readFileSync(join(root, 'appinfo/info.xml'), 'utf8'), /<licence>agpl<\/licence>/);
  });

  it('decides on every installed package with an install script in allowScripts', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
    const modules = join(root, 'node_modules');
    const withScripts: string[] = [];
    for (const entry of readdirSync(modules)) {
      for (const name of entry.startsWith('@') ? readdirSync(join(modules, entry)).map((n) => `${entry}/${n}`) : [entry]) {
        const manifest = join(modules, name, 'package.json');
        if (!existsSync(manifest)) continue;
        const scripts = (JSON.parse(readFileSync(manifest, 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {};
        if (['preinstall', 'install', 'postinstall'].some((s) => s in scripts)) withScripts.push(name);
      }
    }
    assert.ok(withScripts.includes('better-sqlite3'), 'the scan sees install scripts');
    for (const name of withScripts) assert.equal(typeof pkg.allowScripts[name], 'boolean', `${name} has an install script that allowScripts does not decide`);
    // The native build is needed; core-js's postinstall only prints an advertisement.
    assert.equal(pkg.allowScripts['better-sqlite3'], true);
    assert.equal(pkg.allowScripts['core-js'], false);
  });
});
