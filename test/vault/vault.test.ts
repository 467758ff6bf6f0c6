import assert from 'node:assert/strict';
import { statSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadVaultKey, Vault, VaultError } from '../../lib/vault/vault.ts';
import { createTestDatabase, DIALECTS } from '../helpers/databases.ts';

describe('vault key', () => {
  it('creates the key file once with mode 0600 and reuses it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'educai-vault-'));
    const file = join(dir, 'vault.key');
    const k1 = loadVaultKey({ keyFile: file });
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const k2 = loadVaultKey({ keyFile: file });
    assert.equal(k1.length, 32);
    assert.deepEqual(k1, k2);
  });

  it('takes an environment override and rejects a short one', () => {
    const env = Buffer.alloc(32, 7).toString('base64url');
    assert.deepEqual(loadVaultKey({ keyFile: '/nonexistent/never-created', envKey: env }), new Uint8Array(Buffer.alloc(32, 7)));
    assert.throws(() => loadVaultKey({ keyFile: '/nonexistent/x', envKey: 'c2hvcnQ' }), VaultError);
  });
});

for (const dialect of DIALECTS) {
  describe(`vault on ${dialect}`, () => {
    it('round-trips, stores only ciphertext, and fails cleanly with a wrong key', async () => {
      const tdb = await createTestDatabase(dialect);
      try {
        const key = new Uint8Array(32).fill(1);
        const vault = new Vault(tdb.db, key);
        await vault.put('provider.primary.key', 'sk-test-very-secret-1234');
        assert.equal(await vault.get('provider.primary.key'), 'sk-test-very-secret-1234');
        assert.equal(await vault.has('provider.primary.key'), true);
        assert.equal(await vault.get('missing'), null);

        const row = await tdb.db.selectFrom('secrets').selectAll().executeTakeFirstOrThrow();
        assert.ok(!row.ciphertext.includes('sk-test'), 'plaintext is not stored');
        assert.equal(row.ciphertext.split('.').length, 5, 'compact JWE');
        const header = JSON.parse(Buffer.from(row.ciphertext.split('.')[0] ?? '', 'base64url').toString());
        assert.equal(header.enc, 'A256GCM');

        const wrong = new Vault(tdb.db, new Uint8Array(32).fill(2));
        await assert.rejects(
          () => wrong.get('provider.primary.key'),
          (err: unknown) => err instanceof VaultError && !String((err as Error).message).includes('sk-test'),
        );

        // A ciphertext moved under another name does not decrypt.
        await tdb.db.insertInto('secrets').values({ name: 'other', ciphertext: row.ciphertext, updated_at: 1 }).execute();
        await assert.rejects(() => vault.get('other'), VaultError);

        await vault.delete('provider.primary.key');
        assert.equal(await vault.get('provider.primary.key'), null);
      } finally {
        await tdb.drop();
      }
    });

    it('reads a secret another thread rotated, though it keeps what it decrypted', async () => {
      const tdb = await createTestDatabase(dialect);
      try {
        const key = new Uint8Array(32).fill(3);
        const processing = new Vault(tdb.db, key);
        const http = new Vault(tdb.db, key);
        await http.put('bot.secret', 'first-secret-value-0001');
        assert.equal(await processing.get('bot.secret'), 'first-secret-value-0001');
        assert.equal(await processing.get('bot.secret'), 'first-secret-value-0001');
        await http.put('bot.secret', 'second-secret-value-0002');
        assert.equal(await processing.get('bot.secret'), 'second-secret-value-0002');
        await http.delete('bot.secret');
        assert.equal(await processing.get('bot.secret'), null);
      } finally {
        await tdb.drop();
      }
    });
  });
}
