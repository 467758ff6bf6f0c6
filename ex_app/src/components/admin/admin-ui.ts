// Small helpers shared by the administration sections: toasts with actionable text and
// the field errors a 400 answer carries. The toasts are the app's one system (toast.ts).
import { ApiError } from '../../api.ts';
import { t } from '../../l10n.ts';
import { showError, showSuccess } from '../../toast.ts';

export { showError, showSuccess };

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A toast that says what failed and what to do; field errors stay at their fields. */
export function toastError(action: string, err: unknown): void {
  if (err instanceof ApiError && Object.keys(err.fields).length > 0) {
    showError(t('educai', '{action}: please correct the marked fields.', { action }));
    return;
  }
  if (err instanceof ApiError && err.status === 503) {
    showError(t('educai', '{action}: Nextcloud could not confirm your administrator rights. Reload the page and try again.', { action }));
    return;
  }
  showError(
    t('educai', '{action}: {message}. Check the values and try again; if it persists, look at the app log in Nextcloud.', { action, message: errorText(err) }),
  );
}

export function toastSaved(what: string): void {
  showSuccess(t('educai', '{what} saved.', { what }));
}

export function fieldsOf(err: unknown): Record<string, string> {
  return err instanceof ApiError ? err.fields : {};
}

/** "" → null, digits → a number, anything else stays as typed so the server can name the problem. */
export function numberOrNull(value: string | number | null | undefined): number | null | string {
  if (value === null || value === undefined) return null;
  const s = String(value).trim();
  if (s === '') return null;
  return /^-?\d+(\.\d+)?$/.test(s) ? Number(s) : s;
}

export function lines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}
