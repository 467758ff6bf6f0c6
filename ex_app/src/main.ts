import { loadState } from '@nextcloud/initial-state';
import { createApp } from 'vue';
import App from './App.vue';
import { proxyBase } from './api.ts';
import { loadTranslations } from './l10n.ts';

export interface PageConfig {
  appId: string;
  version: string;
}

/** AppAPI stores the initial state as a JSON string under app id `app_api` (contract §4, trap 3). */
function pageConfig(): PageConfig {
  try {
    const raw = loadState<string>('app_api', 'educai-config');
    const parsed = typeof raw === 'string' ? JSON.parse(raw) : raw;
    return { appId: String(parsed?.appId ?? 'educai'), version: String(parsed?.version ?? '') };
  } catch {
    return { appId: 'educai', version: '' };
  }
}

function mount(): void {
  const target = document.querySelector('#content #content') ?? document.getElementById('content');
  if (!target) return;
  const root = document.createElement('div');
  root.id = 'educai-app';
  target.appendChild(root);
  createApp(App, { config: pageConfig() }).mount(root);
}

// The user's language first, so that the first render is already translated.
const start = (): void => void loadTranslations('educai', proxyBase()).finally(mount);
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
