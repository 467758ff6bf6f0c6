// Nextcloud's webhook_listeners app (NC 30+) as captured on NC 33 (test/fixtures/nextcloud33/webhook-listeners.json):
// registration by an ExApp with the empty user, the Mongo-like filter with "/regex/" strings, and the
// background job that delivers through AppAPI with the changing user's header and no Content-Type.
// Off by default, like Nextcloud 29 (which has no such app): its routes then answer 404/998.
import type { FakeNodeEvent } from './dav-files.ts';
import { notLoggedIn, ocsData, ocsFailure } from './ocs.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute, RouteContext } from './server.ts';
import type { UserDirectory } from './users.ts';

export interface FakeWebhookListener {
  id: number;
  appId: string | null;
  userId: string | null;
  httpMethod: string;
  uri: string;
  event: string;
  eventFilter: Record<string, unknown>;
  userIdFilter: string;
  headers: null;
  authMethod: 'none';
  authData: null;
  tokenNeeded: [];
}

/** One queued WebhookCall job, as AppAPI would send it to the ExApp. */
export interface FakeWebhookDelivery {
  listenerId: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

const NODE_EVENTS = new Set(
  ['NodeCreatedEvent', 'NodeWrittenEvent', 'NodeDeletedEvent', 'NodeRenamedEvent', 'NodeCopiedEvent', 'NodeTouchedEvent'].map(
    (e) => `OCP\\Files\\Events\\Node\\${e}`,
  ),
);

function valueAt(doc: unknown, dotted: string): unknown {
  let cur = doc;
  for (const key of dotted.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** PHPMongoQuery's subset we rely on: dotted keys, `$or`/`$and`, equality, and a "/re/flags" string as a regex. */
export function filterMatches(filter: Record<string, unknown>, doc: unknown): boolean {
  return Object.entries(filter).every(([key, want]) => {
    if (key === '$or') return Array.isArray(want) && want.some((f) => filterMatches(f as Record<string, unknown>, doc));
    if (key === '$and') return Array.isArray(want) && want.every((f) => filterMatches(f as Record<string, unknown>, doc));
    const have = valueAt(doc, key);
    const re = typeof want === 'string' ? /^\/(.*?)\/([a-z]*)$/i.exec(want) : null;
    if (re) return typeof have === 'string' && new RegExp(re[1] ?? '', (re[2] ?? '').replace(/[^gimsuy]/g, '')).test(have);
    return have === want;
  });
}

export class FakeWebhookListeners {
  /** Whether the app is installed and enabled (NC 30+); false models Nextcloud 29. */
  available = false;
  readonly listeners = new Map<number, FakeWebhookListener>();
  /** WebhookCall jobs waiting for cron or `occ background-job:worker`. */
  readonly jobs: FakeWebhookDelivery[] = [];
  readonly #users: UserDirectory;
  readonly #app: { id: string; version: string; secret: string };
  readonly #now: () => number;
  #nextId = 1;

  constructor(users: UserDirectory, app: { id: string; version: string; secret: string }, now: () => number) {
    this.#users = users;
    this.#app = app;
    this.#now = now;
  }

  /** What webhook_listeners' event listener does for a node event: queue one job per matching listener. */
  nodeEvent(e: FakeNodeEvent): void {
    if (!this.available) return;
    const eventClass = `OCP\\Files\\Events\\Node\\${e.class}`;
    const data = {
      event: { ...e.data, class: eventClass },
      user: { uid: e.uid, displayName: this.#users.displayName(e.uid) },
      time: Math.floor(this.#now() / 1000),
    };
    for (const l of this.listeners.values()) {
      if (l.event !== eventClass || (l.userIdFilter !== '' && l.userIdFilter !== e.uid) || !filterMatches(l.eventFilter, data)) continue;
      if (l.appId === null || !l.uri.startsWith('/')) continue;
      this.jobs.push({
        listenerId: l.id,
        method: l.httpMethod,
        path: l.uri,
        // As captured: the changing user's AppAPI header, AA-REQUEST-ID "CLI", no Content-Type.
        headers: {
          'aa-version': '33.0.0',
          'ex-app-id': l.appId,
          'ex-app-version': this.#app.version,
          'authorization-app-api': Buffer.from(`${e.uid}:${this.#app.secret}`).toString('base64'),
          'aa-request-id': 'CLI',
          'accept-language': 'en',
          'user-agent': 'Nextcloud-Server-Crawler/33.0.1',
        },
        body: JSON.stringify({ ...data, authentication: [] }),
      });
    }
  }

  /** `occ background-job:worker OCA\WebhookListeners\BackgroundJobs\WebhookCall`: sends every queued job to `exAppUrl`. */
  async runJobs(exAppUrl: string): Promise<number[]> {
    const statuses: number[] = [];
    for (const job of this.jobs.splice(0)) {
      const res = await fetch(`${exAppUrl}${job.path}`, { method: job.method, headers: job.headers, body: job.body });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    return statuses;
  }

  routes(): FakeRoute[] {
    const W = '/apps/webhook_listeners/api/v1/webhooks';
    // #[AuthorizedAdminSetting] + #[AppApiAdminAccessWithoutUser]: an admin, or an ExApp with the empty user.
    const guarded = (method: string, path: string, handle: (ctx: RouteContext, m: RegExpExecArray) => FakeReply): FakeRoute => ({
      method,
      path: new RegExp(`^${W}${path}$`),
      access: 'public',
      csrf: true,
      handle: (ctx, m) => {
        // As captured on NC 33 with the app disabled: HTTP 404, OCS statuscode 998.
        if (!this.available)
          return ocsFailure(
            ctx.version,
            ctx.format,
            998,
            'Invalid query, please check the syntax. API specifications are here: http://www.freedesktop.org/wiki/Specifications/open-collaboration-services.\n',
          );
        if (ctx.user === null) return notLoggedIn(ctx.version, ctx.format);
        if (ctx.user !== '' && !this.#users.isAdmin(ctx.user)) {
          return ocsFailure(ctx.version, ctx.format, 403, 'Logged in account must be an admin, a sub admin or gotten special right to access this setting');
        }
        return handle(ctx, m);
      },
    });
    return [
      guarded('POST', '', (ctx) => {
        const event = String(ctx.params['event'] ?? '').replace(/^\\+/, '');
        if (!NODE_EVENTS.has(event)) return ocsFailure(ctx.version, ctx.format, 400, `${event} is not an event class compatible with webhooks`);
        const filter = ctx.params['eventFilter'];
        const listener: FakeWebhookListener = {
          id: this.#nextId++,
          appId: ctx.user === '' ? String(ctx.headers['ex-app-id'] ?? '') : null,
          userId: ctx.user === '' ? null : ctx.user,
          httpMethod: String(ctx.params['httpMethod'] ?? 'POST'),
          uri: String(ctx.params['uri'] ?? ''),
          event,
          eventFilter: filter !== null && typeof filter === 'object' && !Array.isArray(filter) ? (filter as Record<string, unknown>) : {},
          userIdFilter: String(ctx.params['userIdFilter'] ?? ''),
          headers: null,
          authMethod: 'none',
          authData: null,
          tokenNeeded: [],
        };
        this.listeners.set(listener.id, listener);
        return ocsData(ctx.version, ctx.format, listener);
      }),
      guarded('GET', '', (ctx) => {
        const uri = ctx.query.get('uri');
        return ocsData(
          ctx.version,
          ctx.format,
          [...this.listeners.values()].filter((l) => uri === null || l.uri === uri),
        );
      }),
      guarded('DELETE', '/byappid/([^/]+)', (ctx, m) => {
        const appId = decodeURIComponent(m[1] ?? '');
        let removed = 0;
        for (const [id, l] of this.listeners) {
          if (l.appId === appId) {
            this.listeners.delete(id);
            removed++;
          }
        }
        return ocsData(ctx.version, ctx.format, removed);
      }),
    ];
  }
}
