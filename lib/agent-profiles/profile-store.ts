// Agent profiles, their grants and their credentials (admin only). A credential's value lives in
// the vault: it is written here, never read back through the API, and opened only by
// withProfileCredential right before the outbound request that needs it.
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../storage/schema.ts';
import { parseStringList } from '../storage/json-columns.ts';
import { ResourceScope, type ResourceScopeInput } from '../tools/resource-scope.ts';
import type { Vault } from '../vault/vault.ts';
import type { AgentProfileGrantsTable, AgentProfilesTable } from '../storage/tables/agent-profile-tables.ts';

/** What an admin sets on a profile. */
export interface AgentProfileInput {
  label: string;
  accountUid: string;
  scopeDescription: string;
  toolFamilies: string[];
  triggerGroups: string[];
  confirmGroups: string[];
  enabled: boolean;
}

export interface AgentProfile extends AgentProfileInput {
  id: string;
  createdBy: string;
  createdAt: number;
  updatedAt: number;
}

export interface AgentProfileGrant {
  id: string;
  profileId: string;
  botId: string | null;
  ownerUid: string | null;
  maxScope: ResourceScopeInput;
  approvedBy: string;
  createdAt: number;
}

/** A credential change: a value sets it, no value keeps the stored one. Names left out are removed. */
export interface CredentialInput {
  name: string;
  value?: string;
}

function scopeOf(text: string): ResourceScopeInput {
  try {
    return new ResourceScope(JSON.parse(text) as ResourceScopeInput).toJSON();
  } catch {
    // A stored scope that no longer parses admits nothing.
    return { folders: [], calendars: [], boards: [], collectives: [] };
  }
}

function toProfile(r: Selectable<AgentProfilesTable>): AgentProfile {
  return {
    id: r.id,
    label: r.label,
    accountUid: r.account_uid,
    scopeDescription: r.scope_description,
    toolFamilies: parseStringList(r.tool_families),
    triggerGroups: parseStringList(r.trigger_groups),
    confirmGroups: parseStringList(r.confirm_groups),
    enabled: Number(r.enabled) === 1,
    createdBy: r.created_by,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

function toGrant(r: Selectable<AgentProfileGrantsTable>): AgentProfileGrant {
  return {
    id: r.id,
    profileId: r.profile_id,
    botId: r.bot_id,
    ownerUid: r.owner_uid,
    maxScope: scopeOf(r.max_scope),
    approvedBy: r.approved_by,
    createdAt: Number(r.created_at),
  };
}

function vaultName(profileId: string, name: string): string {
  return `agent-profile:${profileId}:credential:${name}`;
}

export class CredentialMissingError extends Error {
  override name = 'CredentialMissingError';
}

export class AgentProfileStore {
  readonly #db: Kysely<Database>;
  readonly #vault: Vault;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, vault: Vault, now: () => number = Date.now) {
    this.#db = db;
    this.#vault = vault;
    this.#now = now;
  }

  async list(): Promise<AgentProfile[]> {
    const rows = await this.#db.selectFrom('agent_profiles').selectAll().orderBy('label').orderBy('id').execute();
    return rows.map(toProfile);
  }

  async get(id: string): Promise<AgentProfile | null> {
    const row = await this.#db.selectFrom('agent_profiles').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toProfile(row) : null;
  }

  async create(input: AgentProfileInput, createdBy: string): Promise<AgentProfile> {
    const now = this.#now();
    const id = randomUUID();
    await this.#db
      .insertInto('agent_profiles')
      .values({ id, ...this.#columns(input), created_by: createdBy, created_at: now, updated_at: now })
      .execute();
    return (await this.get(id)) as AgentProfile;
  }

  async update(id: string, input: AgentProfileInput): Promise<AgentProfile | null> {
    const current = await this.get(id);
    if (!current) return null;
    await this.#db
      .updateTable('agent_profiles')
      .set({ ...this.#columns(input), updated_at: Math.max(this.#now(), current.updatedAt + 1) })
      .where('id', '=', id)
      .execute();
    return this.get(id);
  }

  /** Removes the profile, its grants and its credentials (vault rows included). */
  async delete(id: string): Promise<boolean> {
    const names = await this.#db.selectFrom('agent_profile_credentials').select('vault_name').where('profile_id', '=', id).execute();
    const deleted = await this.#db.transaction().execute(async (trx) => {
      await trx.deleteFrom('agent_profile_grants').where('profile_id', '=', id).execute();
      await trx.deleteFrom('agent_profile_credentials').where('profile_id', '=', id).execute();
      const r = await trx.deleteFrom('agent_profiles').where('id', '=', id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    });
    for (const n of names) await this.#vault.delete(n.vault_name);
    return deleted;
  }

  #columns(input: AgentProfileInput) {
    return {
      label: input.label,
      account_uid: input.accountUid,
      scope_description: input.scopeDescription,
      tool_families: JSON.stringify([...new Set(input.toolFamilies)]),
      trigger_groups: JSON.stringify([...new Set(input.triggerGroups)]),
      confirm_groups: JSON.stringify([...new Set(input.confirmGroups)]),
      enabled: input.enabled ? 1 : 0,
    };
  }

  // --- credentials ---

  /** Names of the stored credentials; their values never leave through here. */
  async credentialNames(profileId: string): Promise<string[]> {
    const rows = await this.#db.selectFrom('agent_profile_credentials').select('name').where('profile_id', '=', profileId).orderBy('name').execute();
    return rows.map((r) => r.name);
  }

  /** Applies a credential list: values are sealed in the vault; names not listed are removed. */
  async setCredentials(profileId: string, credentials: ReadonlyArray<CredentialInput>): Promise<void> {
    const keep = new Set(credentials.map((c) => c.name));
    const existing = await this.credentialNames(profileId);
    for (const c of credentials) {
      if (c.value === undefined) {
        if (!existing.includes(c.name)) throw new CredentialMissingError(`credential "${c.name}" needs a value`);
        continue;
      }
      const name = vaultName(profileId, c.name);
      await this.#vault.put(name, c.value);
      await this.#db
        .insertInto('agent_profile_credentials')
        .values({ profile_id: profileId, name: c.name, vault_name: name, updated_at: this.#now() })
        .onConflict((oc) => oc.columns(['profile_id', 'name']).doUpdateSet({ vault_name: name, updated_at: this.#now() }))
        .execute();
    }
    for (const name of existing.filter((n) => !keep.has(n))) {
      await this.#db.deleteFrom('agent_profile_credentials').where('profile_id', '=', profileId).where('name', '=', name).execute();
      await this.#vault.delete(vaultName(profileId, name));
    }
  }

  /**
   * Opens one credential for `fn` only, right before the outbound request that needs it. The
   * value is registered with the log redactor when it is decrypted; never return it from `fn`.
   */
  async withProfileCredential<T>(profileId: string, name: string, fn: (value: string) => Promise<T>): Promise<T> {
    const row = await this.#db
      .selectFrom('agent_profile_credentials')
      .select('vault_name')
      .where('profile_id', '=', profileId)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) throw new CredentialMissingError(`the agent profile has no credential "${name}"`);
    const value = await this.#vault.get(row.vault_name);
    if (value === null) throw new CredentialMissingError(`the agent profile's credential "${name}" is missing from the vault`);
    return fn(value);
  }

  // --- grants ---

  async grants(profileId: string): Promise<AgentProfileGrant[]> {
    const rows = await this.#db
      .selectFrom('agent_profile_grants')
      .selectAll()
      .where('profile_id', '=', profileId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toGrant);
  }

  async addGrant(profileId: string, target: { botId: string } | { ownerUid: string }, maxScope: ResourceScope, approvedBy: string): Promise<AgentProfileGrant> {
    const id = randomUUID();
    await this.#db
      .insertInto('agent_profile_grants')
      .values({
        id,
        profile_id: profileId,
        bot_id: 'botId' in target ? target.botId : null,
        owner_uid: 'ownerUid' in target ? target.ownerUid : null,
        max_scope: JSON.stringify(maxScope.toJSON()),
        approved_by: approvedBy,
        created_at: this.#now(),
      })
      .execute();
    const row = await this.#db.selectFrom('agent_profile_grants').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    return toGrant(row);
  }

  async deleteGrant(profileId: string, grantId: string): Promise<boolean> {
    const r = await this.#db.deleteFrom('agent_profile_grants').where('profile_id', '=', profileId).where('id', '=', grantId).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Grants that let this bot use this profile: for the bot itself first, then for its owner's bots. */
  async grantsFor(profileId: string, bot: { id: string; ownerUid: string }): Promise<AgentProfileGrant[]> {
    const rows = await this.#db
      .selectFrom('agent_profile_grants')
      .selectAll()
      .where('profile_id', '=', profileId)
      .where((eb) => eb.or([eb('bot_id', '=', bot.id), eb('owner_uid', '=', bot.ownerUid)]))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toGrant).sort((a, b) => Number(a.botId === null) - Number(b.botId === null));
  }

  /** Enabled profiles granted to this bot or its owner, with the grant's scope (the owner's choices). */
  async grantedTo(bot: { id: string; ownerUid: string }): Promise<Array<{ profile: AgentProfile; grant: AgentProfileGrant }>> {
    const rows = await this.#db
      .selectFrom('agent_profile_grants')
      .selectAll()
      .where((eb) => eb.or([eb('bot_id', '=', bot.id), eb('owner_uid', '=', bot.ownerUid)]))
      .orderBy('created_at')
      .execute();
    const out: Array<{ profile: AgentProfile; grant: AgentProfileGrant }> = [];
    const seen = new Set<string>();
    for (const grant of rows.map(toGrant).sort((a, b) => Number(a.botId === null) - Number(b.botId === null))) {
      if (seen.has(grant.profileId)) continue;
      const profile = await this.get(grant.profileId);
      if (!profile?.enabled) continue;
      seen.add(grant.profileId);
      out.push({ profile, grant });
    }
    return out;
  }

  /** Forgets a deleted bot's grants. */
  async removeBot(botId: string): Promise<void> {
    await this.#db.deleteFrom('agent_profile_grants').where('bot_id', '=', botId).execute();
  }
}
