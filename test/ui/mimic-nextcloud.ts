// A stand-in for the Nextcloud pages around the app (capture 87): the embedded
// top-menu page AppAPI renders, built from what the ExApp registered in the fake
// AppAPI (scripts, styles, the double-encoded initial state, the CSP with a nonce),
// and AppAPI's proxy, which forwards /index.php/apps/app_api/proxy/educai/* to the
// real ExApp with the AppAPI headers of the logged-in user.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { TOP_MENU_NAME } from '../../lib/appapi/ui-registrar.ts';
import type { Harness } from '../helpers/harness.ts';

const THEME_CSS = readFileSync(new URL('./nextcloud-theme.css', import.meta.url), 'utf8');
const EMBEDDED = `/index.php/apps/app_api/embedded/educai/${TOP_MENU_NAME}`;
const PROXY = '/index.php/apps/app_api/proxy/educai/';
/** The browser headers AppAPI's proxy passes on (capture 87, exAppReceivedThroughProxy). */
const PASSED_ON = ['accept', 'accept-language', 'content-type', 'requesttoken', 'ocs-apirequest', 'user-agent'];

export interface MimicNextcloud {
  url: string;
  /** The embedded page's address. */
  pageUrl: string;
  /** Requests the proxy forwarded, for assertions. */
  proxied: Array<{ method: string; path: string; uid: string; requesttoken: string | undefined }>;
  close(): Promise<void>;
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The logged-in user comes from a cookie the test sets on its browser context. */
function sessionUser(req: IncomingMessage): string | null {
  const m = /(?:^|;\s*)mimic_user=([A-Za-z0-9_-]+)/.exec(req.headers.cookie ?? '');
  return m ? m[1]! : null;
}

/** `language`: the user's Nextcloud language, set on <html lang> as core does (default en). */
export async function startMimicNextcloud(
  h: Harness,
  users: Record<string, { displayName: string; admin: boolean; language?: string }>,
): Promise<MimicNextcloud> {
  const proxied: MimicNextcloud['proxied'] = [];

  const page = (uid: string, res: ServerResponse) => {
    const user = users[uid]!;
    const nonce = randomBytes(16).toString('base64');
    const token = randomBytes(24).toString('base64');
    const scripts = [...h.nc.ui.scripts.values()] as Array<{ type: string; name: string; path: string }>;
    const styles = [...h.nc.ui.styles.values()] as Array<{ type: string; name: string; path: string }>;
    const states = [...h.nc.ui.initialStates.values()] as Array<{ type: string; name: string; key: string; value: unknown }>;
    if (!h.nc.ui.topMenus.has(TOP_MENU_NAME)) {
      res.writeHead(404, { 'Content-Type': 'text/html; charset=UTF-8' }).end('<!DOCTYPE html><title>Not found</title>');
      return;
    }
    const mine = <T extends { type: string; name: string }>(list: T[]) => list.filter((e) => e.type === 'top_menu' && e.name === TOP_MENU_NAME);
    const v = 'v=71df24d1-0';
    // ExAppUiMiddleware rewrites the registered paths to proxy URLs with .js / .css (contract §4).
    const styleTags = mine(styles).map((s) => `<link rel="stylesheet" href="${PROXY}${escapeHtml(s.path)}.css?${v}">`);
    const scriptTags = mine(scripts).map((s) => `<script nonce="${nonce}" defer src="${PROXY}${escapeHtml(s.path)}.js?${v}"></script>`);
    // Initial state under app id app_api: JSON-encoded by AppAPI, JSON-encoded again and base64'd by core (trap 3).
    const stateInputs = mine(states).map(
      (s) =>
        `<input type="hidden" id="initial-state-app_api-${escapeHtml(s.key)}" value="${Buffer.from(JSON.stringify(JSON.stringify(s.value))).toString('base64')}">`,
    );
    const html = `<!DOCTYPE html>
<html class="ng-csp" data-placeholder-focus="false" lang="${escapeHtml(user.language ?? 'en')}" data-locale="${escapeHtml(user.language ?? 'en')}" translate="no">
<head data-user="${escapeHtml(uid)}" data-user-displayname="${escapeHtml(user.displayName)}" data-requesttoken="${escapeHtml(token)}">
<meta charset="utf-8">
<title>Talk AI - Nextcloud</title>
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<style nonce="${nonce}">${THEME_CSS}</style>
${styleTags.join('\n')}
${scriptTags.join('\n')}
<script nonce="${nonce}">
var _oc_debug=false;
var _oc_isadmin=${user.admin ? 'true' : 'false'};
var _oc_webroot="";
var _oc_config={"modRewriteWorking":false,"version":"29.0.6.1","versionstring":"29.0.6"};
// What core-main.js provides before app scripts run; @nextcloud/vue styles itself for NC < 32 from it.
var OC={"config":_oc_config,"webroot":"","isUserAdmin":function(){return _oc_isadmin;}};
</script>
</head>
<body id="body-user">
${stateInputs.join('\n')}
<div id="skip-actions"><a href="#app-content" class="button primary skip-navigation skip-content">Skip to main content</a></div>
<header id="header"><div class="header-left"><a href="/index.php" aria-label="Go to Dashboard" id="nextcloud"><div class="logo logo-icon"></div></a></div></header>
<main id="content" class="app-app_api">
<h1 class="hidden-visually" id="page-heading-level-1">Nextcloud</h1>
<div id="content"></div>
</main>
</body>
</html>`;
    res.writeHead(200, {
      'Content-Type': 'text/html; charset=UTF-8',
      'Cache-Control': 'no-cache, no-store, must-revalidate',
      'X-Content-Type-Options': 'nosniff',
      // The CSP Nextcloud sends with the embedded page [87] (host adapted).
      'Content-Security-Policy': `default-src 'none';base-uri 'none';manifest-src 'self';script-src 'nonce-${nonce}' blob: 'self' 'unsafe-eval' 'unsafe-inline';script-src-elem 'strict-dynamic' 'nonce-${nonce}' blob: 'self' 'unsafe-eval' 'unsafe-inline';style-src 'self' 'unsafe-inline';img-src 'self' data: blob:;font-src 'self' data:;connect-src 'self' blob:;media-src 'self' blob:;frame-ancestors 'self';worker-src blob: 'self';form-action 'self'`,
    });
    res.end(html);
  };

  const proxy = async (uid: string, req: IncomingMessage, res: ServerResponse) => {
    const path = '/' + (req.url ?? '').slice(PROXY.length);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = h.headers(uid, { 'X-Origin-IP': '127.0.0.1' });
    for (const name of PASSED_ON) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    proxied.push({ method: req.method ?? 'GET', path, uid, requesttoken: headers['requesttoken'] });
    const upstream = await fetch(`${h.url}${path}`, {
      method: req.method,
      headers,
      body: chunks.length && req.method !== 'GET' && req.method !== 'HEAD' ? Buffer.concat(chunks) : undefined,
    });
    const out: Record<string, string> = {};
    for (const name of ['content-type', 'cache-control', 'x-content-type-options']) {
      const value = upstream.headers.get(name);
      if (value) out[name] = value;
    }
    res.writeHead(upstream.status, out).end(Buffer.from(await upstream.arrayBuffer()));
  };

  const server: Server = createServer((req, res) => {
    const uid = sessionUser(req);
    const url = req.url ?? '/';
    if (!uid || !users[uid]) {
      res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"message":"Current user is not logged in"}');
      return;
    }
    if (req.method === 'GET' && url.split('?')[0] === EMBEDDED) return page(uid, res);
    if (url === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (url.startsWith(PROXY)) {
      proxy(uid, req, res).catch((err: unknown) => {
        res.writeHead(502, { 'Content-Type': 'text/plain' }).end(String(err));
      });
      return;
    }
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    pageUrl: `${url}${EMBEDDED}`,
    proxied,
    close: async () => {
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
    },
  };
}
