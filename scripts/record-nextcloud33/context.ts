// What every recording step shares: the server, the recording ExApp, the direct Talk bot, the
// redactor and the writer of capture files.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RealNextcloud, type User } from '../../test/real-nextcloud/nextcloud.ts';
import { CAPTURE_TEST_SECRET, hmacHex, Listener, Redactor, redactReceived, send, sleep, type Exchange, type Received, type SendInit } from './capture.ts';

export const APP_ID = 'educai';
export const ROUTE = 'talk_bot';

export type Steps = Record<string, unknown>;

export class Context {
  readonly nc = new RealNextcloud();
  readonly redactor = new Redactor();
  readonly outDir: string;
  readonly appSecret: string;
  readonly appVersion: string;
  /** The recording ExApp: answers AppAPI's lifecycle calls and keeps every Talk delivery. */
  readonly exApp: Listener;
  /** A Talk bot installed with occ at a URL of ours: Talk's own request, before AppAPI. */
  readonly direct: Listener;

  constructor(outDir: string, appSecret: string, appVersion: string) {
    this.outDir = outDir;
    this.appSecret = appSecret;
    this.appVersion = appVersion;
    this.redactor.appSecret(appSecret);
    for (const u of ['admin', 'alice', 'bob'] as const) this.redactor.password(u, this.nc.password(u));
    this.exApp = new Listener((req) => this.#answerExApp(req));
    this.direct = new Listener(() => ({ status: 200, body: '' }));
  }

  #answerExApp(req: Received): { status: number; body: string } {
    const path = req.path.split('?')[0];
    if (path === '/heartbeat') return { status: 200, body: '{"status":"ok"}' };
    if (path === '/init') {
      // Reported from "a background task", as AppAPI expects; the exchange is kept for the lifecycle capture.
      setTimeout(() => {
        void this.appApi('', 'PUT', '/ocs/v1.php/apps/app_api/ex-app/status', { progress: 100 }).then((x) => this.initReports.push(x.exchange));
      }, 200);
      return { status: 200, body: '{}' };
    }
    if (path === '/enabled') return { status: 200, body: '{"error":""}' };
    return { status: 200, body: '{}' };
  }

  readonly initReports: Exchange[] = [];

  async start(): Promise<void> {
    mkdirSync(this.outDir, { recursive: true });
    await this.exApp.start();
    await this.direct.start();
  }

  async close(): Promise<void> {
    await this.exApp.close();
    await this.direct.close();
  }

  appApiHeaders(uid: string): Record<string, string> {
    return {
      'EX-APP-ID': APP_ID,
      'EX-APP-VERSION': this.appVersion,
      'AUTHORIZATION-APP-API': Buffer.from(`${uid}:${this.appSecret}`).toString('base64'),
      'OCS-APIRequest': 'true',
      Accept: 'application/json',
    };
  }

  /** A call as the ExApp acting for `uid` ('' = nobody), the product's way in. */
  appApi(uid: string, method: string, path: string, json?: unknown, headers: Record<string, string> = {}) {
    return send(this.redactor, method, `${this.nc.url}${path}`, {
      headers: { ...this.appApiHeaders(uid), ...(json !== undefined ? { 'Content-Type': 'application/json' } : {}), ...headers },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
  }

  /** A raw call as the ExApp acting for `uid` (DAV bodies, other content types). */
  appApiRaw(uid: string, method: string, path: string, init: SendInit = {}) {
    return send(this.redactor, method, `${this.nc.url}${path}`, { ...init, headers: { ...this.appApiHeaders(uid), ...init.headers } });
  }

  /** A call as a user with basic auth (what the Talk clients do). */
  asUser(user: User, method: string, path: string, json?: unknown, headers: Record<string, string> = {}) {
    return send(this.redactor, method, `${this.nc.url}${path}`, {
      headers: {
        Authorization: this.nc.basic(user),
        'OCS-APIRequest': 'true',
        Accept: 'application/json',
        ...(json !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...headers,
      },
      ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
    });
  }

  async occ(...args: string[]): Promise<string> {
    return this.redactor.text(await this.nc.occ(...args));
  }

  /** Waits for the deliveries a step caused, and returns them redacted (direct ones re-signed). */
  async webhooks(waitMs = 700): Promise<{ webhooksReceivedByExApp: Received[]; webhooksReceivedDirect: Received[] }> {
    await sleep(waitMs);
    const viaAppApi = this.exApp.drain().filter((r) => r.path.startsWith(`/${ROUTE}`));
    const direct = this.direct.drain();
    return {
      webhooksReceivedByExApp: viaAppApi.map((r) => redactReceived(this.redactor, r)),
      webhooksReceivedDirect: direct.map((r) =>
        redactReceived(this.redactor, r, { header: 'X-Nextcloud-Talk-Signature', randomHeader: 'X-Nextcloud-Talk-Random' }),
      ),
    };
  }

  write(name: string, about: Record<string, unknown>, steps: Steps): void {
    const file = join(this.outDir, name);
    const text = this.redactor.text(JSON.stringify({ _about: about, ...steps }, null, 1));
    writeFileSync(file, `${text}\n`);
    process.stdout.write(`wrote ${name}\n`);
  }

  /** Re-signs a bot request's signature with the capture secret so a test can recompute it. */
  resignBotRequest(x: Exchange, signed: string): Exchange {
    const random = x.request.headers['X-Nextcloud-Talk-Bot-Random'] ?? '';
    x.request.headers['X-Nextcloud-Talk-Bot-Signature'] = hmacFor(random, signed);
    return x;
  }
}

function hmacFor(random: string, signed: string): string {
  return hmacHex(CAPTURE_TEST_SECRET, random + signed);
}
