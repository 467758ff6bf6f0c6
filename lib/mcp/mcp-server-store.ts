// Admin-registered MCP servers and companion providers. Header values and context keys live in the vault.

import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { base64url } from 'jose';
import { z } from 'zod';
import type { Database } from '../storage/schema.ts';
import { isPlainObject, setOwn } from '../tools/json-schema.ts';
import { isValidToolName } from '../tools/tool-provider.ts';
import { withToolTables, type McpServersTable } from '../storage/tables/tool-tables.ts';
import { MASK, type Vault } from '../vault/vault.ts';
import { collectFieldErrors } from '../validation/field-errors.ts';

export type McpServerKind = 'mcp' | 'companion';
/** read: runs; write: confirmed after untrusted content (S6); confirm: always confirmed; destructive: as write, destructive; off. */
export type McpToolPolicyName = 'read' | 'write' | 'confirm' | 'destructive' | 'off';

export interface McpToolPolicySetting {
  policy: McpToolPolicyName;
}

export interface McpServer {
  id: string;
  name: string;
  url: string;
  kind: McpServerKind;
  enabled: boolean;
  /** The admin's decision per tool; a tool without an entry is not approved. */
  toolPolicies: Record<string, McpToolPolicySetting>;
  /** Tool name → hash of the tool as approved. */
  approvedTools: Record<string, string>;
  approvedToolsHash: string | null;
  /** Names of the stored headers; their values never leave the vault except towards the server. */
  headerNames: string[];
  /** In agent mode, this agent profile credential goes out as `Authorization: Bearer` on each call; null: none. */
  agentCredential: string | null;
  createdAt: number;
  updatedAt: number;
}

/** What the admin API shows: header names with masks, never a value. */
export interface McpServerPublic extends Omit<McpServer, 'approvedTools' | 'headerNames'> {
  /** Header name → mask; never the value. */
  headers: Record<string, string>;
}

export interface McpServerInput {
  name: string;
  url: string;
  kind?: McpServerKind;
  enabled?: boolean;
  /** Header name → value. On update, a value equal to MASK keeps the stored value; null or {} removes all. */
  headers?: Record<string, string> | null;
  toolPolicies?: Record<string, McpToolPolicySetting>;
  /** Name of an agent profile credential (never its value); null removes it. */
  agentCredential?: string | null;
}

export type McpServerPatch = Partial<Omit<McpServerInput, 'kind'>> & { kind?: McpServerKind };

export interface McpApproval {
  approvedTools: Record<string, string>;
  approvedToolsHash: string;
  toolPolicies: Record<string, McpToolPolicySetting>;
}

export class McpServerValidationError extends Error {
  override name = 'McpServerValidationError';
  readonly fields: Record<string, string>;

  constructor(fields: Record<string, string>) {
    super(
      `Invalid tool server: ${Object.entries(fields)
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ')}`,
    );
    this.fields = fields;
  }
}

export const MAX_HEADERS = 10;
/** The name rule of agent profile credentials (lib/server/routes/agent-profiles-api.ts). */
export const AGENT_CREDENTIAL_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const NAME_TAKEN = 'Another tool server already has this name';
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
// Headers the transport sets itself; an admin value would break or hijack the protocol.
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'keep-alive',
  'mcp-session-id',
  'mcp-protocol-version',
  'last-event-id',
  'cookie2',
  'proxy-authorization',
  'expect',
]);

function headersVaultName(id: string): string {
  return `mcp.${id}.headers`;
}

function contextKeyVaultName(id: string): string {
  return `mcp.${id}.context-key`;
}

const urlSchema = z
  .string({ error: 'Must be a text' })
  .trim()
  .min(1, 'Enter the server URL')
  .max(2048, 'At most 2048 characters')
  .superRefine((value, ctx) => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'Not a valid URL' });
      return;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') ctx.addIssue({ code: 'custom', message: 'Only http and https URLs are allowed' });
    else if (url.username !== '' || url.password !== '') ctx.addIssue({ code: 'custom', message: 'Put credentials in a header, not in the URL' });
    else if (url.hash !== '') ctx.addIssue({ code: 'custom', message: 'A URL with a #fragment is not allowed' });
  })
  .transform((value) => new URL(value).toString());

const policySchema = z
  .object({ policy: z.enum(['read', 'write', 'confirm', 'destructive', 'off'], { error: 'Use read, write, confirm, destructive or off' }) })
  .strict();

const toolPoliciesSchema = z
  .record(z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'Not a valid tool name'), policySchema)
  .refine((r) => Object.keys(r).length <= 500, 'At most 500 tools');

const fieldSchemas = {
  name: z
    .string({ error: 'Must be a text' })
    .trim()
    .min(1, 'Enter a name')
    .max(100, 'At most 100 characters')
    .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), 'No control characters'),
  url: urlSchema,
  kind: z.enum(['mcp', 'companion'], { error: 'Use mcp or companion' }),
  enabled: z.boolean({ error: 'Must be true or false' }),
  toolPolicies: toolPoliciesSchema,
  // A name as the agent profiles API accepts it; the registration never holds the secret itself.
  agentCredential: z
    .string({ error: 'Must be the name of an agent profile credential, or null' })
    .regex(AGENT_CREDENTIAL_NAME, 'The name of an agent profile credential (letters, digits, dot, dash or underscore; at most 64), not its value')
    .nullable(),
};

const createSchema = z.object({
  ...fieldSchemas,
  agentCredential: fieldSchemas.agentCredential.default(null),
  kind: fieldSchemas.kind.default('mcp'),
  enabled: fieldSchemas.enabled.default(true),
  toolPolicies: fieldSchemas.toolPolicies.default({}),
});
const patchSchema = z.object(fieldSchemas).partial();

function checkHeaders(value: unknown, existing: Record<string, string>, fields: Record<string, string>): Record<string, string> | null {
  if (value === null) return {};
  if (!isPlainObject(value)) {
    fields.headers = 'Must be an object of header names and values';
    return null;
  }
  const entries = Object.entries(value);
  if (entries.length > MAX_HEADERS) {
    fields.headers = `At most ${MAX_HEADERS} headers`;
    return null;
  }
  const out: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, raw] of entries) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name)) fields[`headers.${name}`] = 'Not a valid header name';
    else if (RESERVED_HEADERS.has(lower)) fields[`headers.${name}`] = 'This header is set by the transport';
    else if (seen.has(lower)) fields[`headers.${name}`] = 'Header given twice';
    else if (typeof raw !== 'string') fields[`headers.${name}`] = 'Must be a text';
    else if (raw === MASK) {
      const kept = Object.entries(existing).find(([k]) => k.toLowerCase() === lower);
      if (kept) setOwn(out, name, kept[1]);
      else fields[`headers.${name}`] = 'Enter a value';
    } else if (raw.length === 0 || raw.length > 4096) fields[`headers.${name}`] = 'Use 1 to 4096 characters';
    else if (/[\r\n\u0000]/.test(raw)) fields[`headers.${name}`] = 'No line breaks';
    else setOwn(out, name, raw);
    seen.add(lower);
  }
  return out;
}

function parseJson<T>(text: string, fallback: T, check: (v: unknown) => boolean): T {
  try {
    const value: unknown = JSON.parse(text);
    return check(value) ? (value as T) : fallback;
  } catch {
    return fallback;
  }
}

function parsePolicies(text: string): Record<string, McpToolPolicySetting> {
  const raw = parseJson<Record<string, unknown>>(text, {}, isPlainObject);
  const out: Record<string, McpToolPolicySetting> = {};
  for (const [name, value] of Object.entries(raw)) {
    const parsed = policySchema.safeParse(value);
    if (isValidToolName(name) && parsed.success) setOwn(out, name, parsed.data);
  }
  return out;
}

function parseApproved(text: string): Record<string, string> {
  const raw = parseJson<Record<string, unknown>>(text, {}, isPlainObject);
  const out: Record<string, string> = {};
  for (const [name, hash] of Object.entries(raw)) if (isValidToolName(name) && typeof hash === 'string') setOwn(out, name, hash);
  return out;
}

function toServer(row: Selectable<McpServersTable>): McpServer {
  return {
    id: row.id,
    name: row.name,
    url: row.url,
    kind: row.kind === 'companion' ? 'companion' : 'mcp',
    enabled: Number(row.enabled) === 1,
    toolPolicies: parsePolicies(row.tool_policies),
    approvedTools: parseApproved(row.approved_tools),
    approvedToolsHash: row.approved_tools_hash,
    headerNames: parseJson<string[]>(row.header_names, [], (v) => Array.isArray(v) && v.every((x) => typeof x === 'string')),
    agentCredential: typeof row.agent_credential === 'string' && AGENT_CREDENTIAL_NAME.test(row.agent_credential) ? row.agent_credential : null,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** What the admin API returns: header names with a mask, never a value. */
export function toPublic(server: McpServer): McpServerPublic {
  const headers: Record<string, string> = {};
  for (const name of server.headerNames) setOwn(headers, name, MASK);
  return {
    id: server.id,
    name: server.name,
    url: server.url,
    kind: server.kind,
    enabled: server.enabled,
    toolPolicies: structuredClone(server.toolPolicies),
    approvedToolsHash: server.approvedToolsHash,
    headers,
    agentCredential: server.agentCredential,
    createdAt: server.createdAt,
    updatedAt: server.updatedAt,
  };
}

function newContextKey(): string {
  return base64url.encode(randomBytes(32));
}

export class McpServerStore {
  readonly #db: Kysely<Database>;
  readonly #vault: Vault;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, vault: Vault, now: () => number = Date.now) {
    this.#db = withToolTables(db);
    this.#vault = vault;
    this.#now = now;
  }

  /**
   * Registers a server. For a companion, `contextKey` is the shared key that signs the
   * invocation context; it is returned this once, for the admin to hand to the companion.
   */
  async create(input: McpServerInput): Promise<{ server: McpServer; contextKey: string | null }> {
    if (!isPlainObject(input)) throw new McpServerValidationError({ input: 'Must be an object' });
    const fields: Record<string, string> = {};
    const parsed = createSchema.safeParse(input);
    if (!parsed.success) collectFieldErrors(parsed.error.issues, fields, { unknownKey: null });
    const headers = input.headers === undefined ? {} : checkHeaders(input.headers, {}, fields);
    if (parsed.success && !('name' in fields) && (await this.#nameTaken(parsed.data.name, null))) fields.name = NAME_TAKEN;
    if (!parsed.success || headers === null || Object.keys(fields).length > 0) throw new McpServerValidationError(fields);

    const v = parsed.data;
    const now = this.#now();
    const id = randomUUID();
    const row: Selectable<McpServersTable> = {
      id,
      name: v.name,
      url: v.url,
      kind: v.kind,
      enabled: v.enabled ? 1 : 0,
      tool_policies: JSON.stringify(v.toolPolicies),
      approved_tools: '{}',
      approved_tools_hash: null,
      header_names: JSON.stringify(Object.keys(headers)),
      agent_credential: v.agentCredential,
      created_at: now,
      updated_at: now,
    };
    if (Object.keys(headers).length > 0) await this.#vault.put(headersVaultName(id), JSON.stringify(headers));
    let contextKey: string | null = null;
    if (v.kind === 'companion') {
      contextKey = newContextKey();
      await this.#vault.put(contextKeyVaultName(id), contextKey);
    }
    try {
      await this.#db.insertInto('mcp_servers').values(row).execute();
    } catch (error) {
      await this.#dropSecrets(id);
      if (await this.#nameTaken(v.name, null)) throw new McpServerValidationError({ name: NAME_TAKEN });
      throw error;
    }
    return { server: toServer(row), contextKey };
  }

  async get(id: string): Promise<McpServer | null> {
    if (typeof id !== 'string' || id === '') return null;
    const row = await this.#db.selectFrom('mcp_servers').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toServer(row) : null;
  }

  async list(): Promise<McpServer[]> {
    const rows = await this.#db.selectFrom('mcp_servers').selectAll().orderBy('name').orderBy('id').execute();
    return rows.map(toServer);
  }

  /**
   * Changes only the fields present. A new URL is another server: its approval is
   * dropped, so every tool stays off until the admin approves again.
   */
  async update(id: string, patch: McpServerPatch): Promise<McpServer | null> {
    if (!isPlainObject(patch)) throw new McpServerValidationError({ input: 'Must be an object' });
    const existing = await this.get(id);
    if (!existing) return null;
    const fields: Record<string, string> = {};
    const parsed = patchSchema.safeParse(patch);
    if (!parsed.success) collectFieldErrors(parsed.error.issues, fields, { unknownKey: null });
    if (parsed.success && parsed.data.kind !== undefined && parsed.data.kind !== existing.kind) {
      fields.kind = 'The kind cannot change; register a new provider instead';
    }
    let headers: Record<string, string> | null | undefined;
    if ('headers' in patch && patch.headers !== undefined) headers = checkHeaders(patch.headers, await this.headers(id), fields);
    const name = parsed.success ? parsed.data.name : undefined;
    if (name !== undefined && name !== existing.name && !('name' in fields) && (await this.#nameTaken(name, id))) fields.name = NAME_TAKEN;
    if (!parsed.success || headers === null || Object.keys(fields).length > 0) throw new McpServerValidationError(fields);

    const v = parsed.data;
    const set: Partial<Selectable<McpServersTable>> = { updated_at: this.#now() };
    if (v.name !== undefined) set.name = v.name;
    if (v.enabled !== undefined) set.enabled = v.enabled ? 1 : 0;
    if (v.toolPolicies !== undefined) set.tool_policies = JSON.stringify(v.toolPolicies);
    if (v.agentCredential !== undefined) set.agent_credential = v.agentCredential;
    if (v.url !== undefined && v.url !== existing.url) {
      set.url = v.url;
      set.approved_tools = '{}';
      set.approved_tools_hash = null;
    }
    if (headers !== undefined) {
      set.header_names = JSON.stringify(Object.keys(headers));
      if (Object.keys(headers).length > 0) await this.#vault.put(headersVaultName(id), JSON.stringify(headers));
      else await this.#vault.delete(headersVaultName(id));
    }
    await this.#db.updateTable('mcp_servers').set(set).where('id', '=', id).execute();
    return this.get(id);
  }

  /** Pins the reviewed tool list and the admin's policies. */
  async approve(id: string, approval: McpApproval): Promise<McpServer | null> {
    const fields: Record<string, string> = {};
    const policies = toolPoliciesSchema.safeParse(approval?.toolPolicies ?? {});
    if (!policies.success)
      collectFieldErrors(
        policies.error.issues.map((i) => ({ ...i, path: ['toolPolicies', ...i.path] })),
        fields,
        { unknownKey: null },
      );
    if (typeof approval?.approvedToolsHash !== 'string' || !/^[a-f0-9]{64}$/.test(approval.approvedToolsHash))
      fields.approvedToolsHash = 'Not a tool list hash';
    const tools = isPlainObject(approval?.approvedTools) ? approval.approvedTools : null;
    if (tools === null || Object.entries(tools).some(([n, h]) => !isValidToolName(n) || typeof h !== 'string'))
      fields.approvedTools = 'Must map tool names to hashes';
    if (!policies.success || Object.keys(fields).length > 0) throw new McpServerValidationError(fields);
    const result = await this.#db
      .updateTable('mcp_servers')
      .set({
        approved_tools: JSON.stringify(tools),
        approved_tools_hash: approval.approvedToolsHash,
        tool_policies: JSON.stringify(policies.data),
        updated_at: this.#now(),
      })
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0 ? this.get(id) : null;
  }

  async delete(id: string): Promise<boolean> {
    const result = await this.#db.deleteFrom('mcp_servers').where('id', '=', id).executeTakeFirst();
    await this.#dropSecrets(id);
    return Number(result.numDeletedRows) > 0;
  }

  /** Header values, for the connection to this server only. */
  async headers(id: string): Promise<Record<string, string>> {
    const text = await this.#vault.get(headersVaultName(id));
    if (text === null) return {};
    const value = parseJson<Record<string, unknown>>(text, {}, isPlainObject);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(value)) if (typeof v === 'string') setOwn(out, k, v);
    return out;
  }

  /** The companion's signing key, or null for plain MCP servers. */
  async contextKey(id: string): Promise<Uint8Array | null> {
    const text = await this.#vault.get(contextKeyVaultName(id));
    return text === null ? null : base64url.decode(text);
  }

  /** A new companion key, returned once; the old one stops verifying immediately. */
  async rotateContextKey(id: string): Promise<string | null> {
    const server = await this.get(id);
    if (!server || server.kind !== 'companion') return null;
    const key = newContextKey();
    await this.#vault.put(contextKeyVaultName(id), key);
    return key;
  }

  async #dropSecrets(id: string): Promise<void> {
    await this.#vault.delete(headersVaultName(id));
    await this.#vault.delete(contextKeyVaultName(id));
  }

  async #nameTaken(name: string, exceptId: string | null): Promise<boolean> {
    const rows = await this.#db.selectFrom('mcp_servers').select(['id', 'name']).execute();
    const lower = name.toLowerCase();
    return rows.some((r) => r.id !== exceptId && r.name.toLowerCase() === lower);
  }
}
