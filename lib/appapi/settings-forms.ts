// The declarative settings forms registered in Nextcloud's own settings through AppAPI (test/fixtures/nextcloud29/86-appapi-declarative-settings.json),
// and the shape Nextcloud core accepts. AppAPI stores any schema, but one that core rejects breaks
// GET settings/api/declarative/forms with a 500 for every user until it is removed, so each form is
// checked here before it is registered.
import { z } from 'zod';
import { embeddedPageUrl } from '../nextcloud/appapi.ts';

/** Tool families a user may allow for their bots (first-party providers; lib/tools/first-party-tool.ts). */
export const TOOL_FAMILIES = ['files', 'sharing', 'calendar', 'deck', 'collectives'] as const;
export type ToolFamilyName = (typeof TOOL_FAMILIES)[number];

export const ADMIN_FORM_ID = 'educai_admin_settings';
export const PERSONAL_FORM_ID = 'educai_personal_settings';

/** Field ids are the app-config keys (admin form) and the preference keys (personal form) AppAPI stores under (contract §4). */
export const ADMIN_FIELDS = {
  defaultModel: 'educai_default_model',
  userRequestsPerHour: 'educai_user_requests_per_hour',
  memoryTokens: 'educai_memory_tokens',
} as const;
export const TOOL_FAMILIES_KEY = 'educai_tool_families';

const FIELD_TYPES = ['text', 'password', 'email', 'tel', 'url', 'number', 'checkbox', 'multi-checkbox', 'radio', 'select', 'multi-select'] as const;
const WITH_OPTIONS = new Set(['multi-checkbox', 'radio', 'select', 'multi-select']);

const option = z.union([z.string(), z.object({ name: z.string().min(1), value: z.union([z.string(), z.number()]) }).strict()]);

const field = z
  .object({
    id: z.string().regex(/^[a-z0-9_]{1,64}$/, 'field ids are lowercase letters, digits and _ (they become config keys)'),
    title: z.string().min(1),
    description: z.string().optional(),
    type: z.enum(FIELD_TYPES),
    default: z.union([z.string(), z.number(), z.boolean(), z.record(z.string(), z.boolean()), z.array(z.string())]).optional(),
    options: z.array(option).min(1).optional(),
    placeholder: z.string().optional(),
    label: z.string().optional(),
    // The ExApp cannot read a sensitive value back (AppAPI encrypts it, contract §10.15): none of ours is.
    sensitive: z.literal(false).optional(),
  })
  .strict()
  .superRefine((f, ctx) => {
    if (WITH_OPTIONS.has(f.type) && f.options === undefined) ctx.addIssue({ code: 'custom', path: ['options'], message: `a ${f.type} field needs options` });
    if (!WITH_OPTIONS.has(f.type) && f.options !== undefined)
      ctx.addIssue({ code: 'custom', path: ['options'], message: `a ${f.type} field takes no options` });
    const d = f.default;
    if (d === undefined) return;
    const ok =
      f.type === 'number'
        ? typeof d === 'number'
        : f.type === 'checkbox'
          ? typeof d === 'boolean'
          : f.type === 'multi-checkbox'
            ? typeof d === 'object' && !Array.isArray(d)
            : f.type === 'multi-select'
              ? Array.isArray(d)
              : typeof d === 'string';
    if (!ok) ctx.addIssue({ code: 'custom', path: ['default'], message: `the default does not suit a ${f.type} field` });
  });

/** Core's DeclarativeManager::validateSchema (NC 29+), with storage_type as AppAPI forces it. */
export const declarativeFormSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9_]{1,64}$/),
    priority: z.number().int().min(0).max(100).optional(),
    section_type: z.enum(['admin', 'personal']),
    section_id: z.string().min(1),
    storage_type: z.literal('external').optional(),
    title: z.string().min(1),
    description: z.string().optional(),
    doc_url: z.string().optional(),
    fields: z.array(field).min(1),
  })
  .strict()
  .superRefine((form, ctx) => {
    const seen = new Set<string>();
    form.fields.forEach((f, i) => {
      if (seen.has(f.id)) ctx.addIssue({ code: 'custom', path: ['fields', i, 'id'], message: 'field ids must be unique' });
      seen.add(f.id);
    });
  });

export type DeclarativeForm = z.input<typeof declarativeFormSchema>;

export class InvalidSettingsFormError extends Error {
  override name = 'InvalidSettingsFormError';
}

/** Throws with the first problem's path when Nextcloud would not accept the form. */
export function assertValidForm(form: unknown): asserts form is DeclarativeForm {
  const result = declarativeFormSchema.safeParse(form);
  if (result.success) return;
  const issue = result.error.issues[0];
  const id = typeof form === 'object' && form !== null && 'id' in form ? String((form as { id: unknown }).id).slice(0, 64) : '?';
  throw new InvalidSettingsFormError(
    `settings form ${id} would break Nextcloud's settings pages: ${issue ? `${issue.path.join('.') || 'form'}: ${issue.message}` : 'invalid'}`,
  );
}

/** Where the full administration page lives: the embedded top-menu page with its hash view. */
export function adminPageUrl(nextcloudUrl: string): string {
  return `${embeddedPageUrl(nextcloudUrl, 'educai', 'educai-main')}#admin`;
}

export function adminForm(nextcloudUrl: string): DeclarativeForm {
  return {
    id: ADMIN_FORM_ID,
    priority: 10,
    section_type: 'admin',
    section_id: 'ai',
    title: 'Talk AI',
    description:
      'The essentials of Talk AI. Endpoints, keys, tool servers and every other setting are on the full administration page (the documentation link of this section).',
    doc_url: adminPageUrl(nextcloudUrl),
    fields: [
      {
        id: ADMIN_FIELDS.defaultModel,
        title: 'Default model',
        description: 'The model bots use unless they choose one, e.g. gpt-4o-mini or secondary:llama3 (empty: the endpoint\u2019s first model)',
        type: 'text',
        default: '',
        placeholder: 'gpt-4o-mini',
      },
      {
        id: ADMIN_FIELDS.userRequestsPerHour,
        title: 'Requests per user and hour',
        description: 'Chat requests each user may make per hour while rate limits are on (0: no per-user limit)',
        type: 'number',
        default: 0,
      },
      {
        id: ADMIN_FIELDS.memoryTokens,
        title: 'Conversation memory (tokens)',
        description: 'How much of a conversation a bot remembers (1000 to 1000000)',
        type: 'number',
        default: 8000,
      },
    ],
  };
}

export function personalForm(): DeclarativeForm {
  return {
    id: PERSONAL_FORM_ID,
    priority: 10,
    section_type: 'personal',
    section_id: 'additional',
    title: 'Talk AI',
    description: 'Which Nextcloud tools your bots may use on your behalf. If saving here fails, use "Personal settings" on the Talk AI page.',
    fields: [
      {
        id: TOOL_FAMILIES_KEY,
        title: 'Tools my bots may use',
        type: 'multi-checkbox',
        default: Object.fromEntries(TOOL_FAMILIES.map((f) => [f, true])),
        options: [
          { name: 'Files', value: 'files' },
          { name: 'Sharing', value: 'sharing' },
          { name: 'Calendar', value: 'calendar' },
          { name: 'Deck', value: 'deck' },
          { name: 'Collectives', value: 'collectives' },
        ],
      },
    ],
  };
}
