// Toasts in Nextcloud's look (bottom right, theme colours), for results and errors with a hint
// what to do. Our own few lines: @nextcloud/dialogs' lazy imports cannot be built into the
// single classic script AppAPI loads (toolchain trap 1).
import { createApp, reactive } from 'vue';
import ToastList from './components/ToastList.vue';

export interface Toast {
  id: number;
  type: 'error' | 'success';
  text: string;
}

export const toasts = reactive<Toast[]>([]);
let nextId = 1;
let mounted = false;

const TIMEOUT_MS = { success: 5_000, error: 12_000 } as const;

function show(type: Toast['type'], text: string): void {
  if (!mounted) {
    const host = document.createElement('div');
    host.id = 'educai-toasts';
    document.body.appendChild(host);
    createApp(ToastList).mount(host);
    mounted = true;
  }
  const id = nextId++;
  toasts.push({ id, type, text });
  setTimeout(() => dismiss(id), TIMEOUT_MS[type]);
}

export function dismiss(id: number): void {
  const i = toasts.findIndex((toast) => toast.id === id);
  if (i >= 0) toasts.splice(i, 1);
}

export function showError(text: string): void {
  show('error', text);
}

export function showSuccess(text: string): void {
  show('success', text);
}
