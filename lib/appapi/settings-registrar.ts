// The "Talk AI" sections in Nextcloud's admin and personal settings (AppAPI declarative settings,
// contract §4, test/fixtures/nextcloud29/86-appapi-declarative-settings.json): registered on enable, removed on disable. Every form is checked against
// the shape core accepts before anything is sent, because a form core rejects breaks the settings
// pages of every user (86: registerFormWithoutSectionType).
import type { Logger } from '../log/logger.ts';
import { registerSettingsForm, unregisterSettingsForm } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';
import type { Registrar } from './enabled-handler.ts';
import { assertValidForm, type DeclarativeForm } from './settings-forms.ts';

export interface SettingsRegistrarDeps {
  nextcloud: NextcloudClient;
  forms: () => DeclarativeForm[];
  logger: Logger;
  /** After the forms are registered (the admin form's values are reconciled); a failure only logs. */
  afterRegister?: () => Promise<unknown>;
}

export function settingsRegistrar(deps: SettingsRegistrarDeps): Registrar {
  return {
    name: 'the settings forms',
    register: async () => {
      const forms = deps.forms();
      for (const form of forms) assertValidForm(form);
      for (const form of forms) await registerSettingsForm(deps.nextcloud, form);
      deps.logger.info({ forms: forms.map((f) => f.id) }, 'settings forms registered');
      try {
        await deps.afterRegister?.();
      } catch (err) {
        deps.logger.warn({ err }, 'the admin settings form could not be reconciled after registration');
      }
    },
    unregister: async () => {
      const removed: string[] = [];
      for (const form of deps.forms()) {
        try {
          await unregisterSettingsForm(deps.nextcloud, form.id);
          removed.push(form.id);
        } catch (err) {
          if (!(err instanceof NextcloudNotFoundError)) throw err;
        }
      }
      deps.logger.info({ removed }, 'settings forms unregistered');
    },
  };
}
