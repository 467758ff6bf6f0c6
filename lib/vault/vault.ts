import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { CompactEncrypt, compactDecrypt, base64url } from 'jose';
import type { Kysely } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { registerSecret } from '../log/redact.ts';
import { PreparedQuery } from '../storage/prepared-query.ts';

export class VaultError extends Error {
  override name = 'VaultError';
}

/** What the API shows instead of a stored secret. */
export const MASK = '********';

export function maskSecret(isSet: boolean): string {
  return isSet ? MASK : '';
}

/** Loads the 256-bit key: env override, else a key file (created 0600 on first start). */
export function loadVaultKey(options: { keyFile: string; envKey?: string | null }): Uint8Array {
  if (options.envKey) {
    const key = base64url.decode(options.envKey);
    if (key.length !== 32) throw new VaultError('EDUCAI_VAULT_KEY must be 32 bytes in base64url');
    return key;
  }
  if (!existsSync(options.keyFile)) {
    mkdirSync(dirname(options.keyFile), { recursive: true });
    writeFileSync(options.keyFile, base64url.encode(randomBytes(32)), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(options.keyFile, 0o600);
  const key = base64url.decode(readFileSync(options.keyFile, 'utf8').trim());
  if (key.length !== 32) throw new VaultError(`vault key file ${options.keyFile} does not hold a 32-byte key`);
  return key;
}

const PLAINTEXT_CACHE_SIZE = 256;

// Read on every model call (the provider key): prepared once (storage/prepared-query.ts).
const CIPHERTEXT = new PreparedQuery((db, p: { name: string }) => db.selectFrom('secrets').select('ciphertext').where('name', '=', p.name));

/**
 * Provider keys, bot secrets and other credentials, encrypted at rest as JWE
 * (dir + A256GCM). The row name is bound into the protected header, so a
 * ciphertext copied to another name does not decrypt.
 */
export class Vault {
  readonly #db: Kysely<Database>;
  readonly #key: Uint8Array;
  readonly #now: () => number;
  /** Decrypted values by ciphertext: decrypting costs more than the rest of reading a secret. */
  readonly #plain = new Map<string, { name: string; value: string }>();

  constructor(db: Kysely<Database>, key: Uint8Array, now: () => number = Date.now) {
    this.#db = db;
    this.#key = key;
    this.#now = now;
  }

  async encrypt(name: string, plaintext: string): Promise<string> {
    return new CompactEncrypt(new TextEncoder().encode(plaintext)).setProtectedHeader({ alg: 'dir', enc: 'A256GCM', kid: name }).encrypt(this.#key);
  }

  async decrypt(name: string, ciphertext: string): Promise<string> {
    // The ciphertext names its plaintext exactly, so a hit is never stale (another thread may rotate a secret).
    const cached = this.#plain.get(ciphertext);
    if (cached !== undefined && cached.name === name) return cached.value;
    let result;
    try {
      result = await compactDecrypt(ciphertext, this.#key);
    } catch {
      throw new VaultError(`secret "${name}" cannot be decrypted: the vault key is not the one it was stored with`);
    }
    if (result.protectedHeader.kid !== name) throw new VaultError(`secret "${name}" was stored under another name`);
    const value = new TextDecoder().decode(result.plaintext);
    registerSecret(value);
    if (this.#plain.size >= PLAINTEXT_CACHE_SIZE) this.#plain.delete(this.#plain.keys().next().value as string);
    this.#plain.set(ciphertext, { name, value });
    return value;
  }

  async put(name: string, plaintext: string): Promise<void> {
    registerSecret(plaintext);
    const ciphertext = await this.encrypt(name, plaintext);
    const now = this.#now();
    await this.#db
      .insertInto('secrets')
      .values({ name, ciphertext, updated_at: now })
      .onConflict((oc) => oc.column('name').doUpdateSet({ ciphertext, updated_at: now }))
      .execute();
  }

  async get(name: string): Promise<string | null> {
    const row = await CIPHERTEXT.first(this.#db, { name });
    return row ? this.decrypt(name, row.ciphertext) : null;
  }

  async has(name: string): Promise<boolean> {
    const row = await this.#db.selectFrom('secrets').select('name').where('name', '=', name).executeTakeFirst();
    return row !== undefined;
  }

  async delete(name: string): Promise<void> {
    await this.#db.deleteFrom('secrets').where('name', '=', name).execute();
  }

  /** Registers every stored secret with the log redactor at start-up. */
  async primeRedaction(): Promise<void> {
    const rows = await this.#db.selectFrom('secrets').select(['name', 'ciphertext']).execute();
    for (const row of rows) {
      try {
        await this.decrypt(row.name, row.ciphertext);
      } catch {
        // An undecryptable secret is reported where it is used.
      }
    }
  }
}
