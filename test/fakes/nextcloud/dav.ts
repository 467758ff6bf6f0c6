// `/remote.php/dav` of the fake: files, trash bin, versions, SEARCH, principals and CalDAV,
// plus the OCS sharing routes that work on the same files. DAV needs a real user: the
// empty user and a wrong secret get capture 75's 401.
import { FakeCalendars } from './dav-calendars.ts';
import { FakeFiles } from './dav-files.ts';
import { davError, notAuthenticated } from './dav-xml.ts';
import type { FakeReply } from './ocs.ts';
import type { FakeRoute } from './server.ts';
import { FakeSharing } from './sharing.ts';
import type { UserDirectory } from './users.ts';

const WELL_KNOWN_404 =
  '<!doctype html><html><head><title>404 Not Found</title></head><body><h1>Not Found</h1><p>The requested resource was not found on this server.</p></body></html>';

export class FakeDav {
  readonly files: FakeFiles;
  readonly calendars: FakeCalendars;
  readonly sharing: FakeSharing;
  readonly #baseUrl: () => string;

  constructor(users: UserDirectory, now: () => number, baseUrl: () => string) {
    this.#baseUrl = baseUrl;
    this.files = new FakeFiles(now);
    this.calendars = new FakeCalendars(users, now);
    this.sharing = new FakeSharing(this.files, users, baseUrl, now);
  }

  ocsRoutes(): FakeRoute[] {
    return this.sharing.routes();
  }

  handles(path: string): boolean {
    return path === '/remote.php/dav' || path.startsWith('/remote.php/dav/') || path.startsWith('/.well-known/');
  }

  handle(method: string, path: string, headers: Record<string, string>, body: string, user: string | null): FakeReply {
    // Capture 80: without the .htaccess redirect the well-known URL is a plain 404 page.
    if (path.startsWith('/.well-known/')) return { status: 404, headers: { 'content-type': 'text/html; charset=UTF-8' }, body: WELL_KNOWN_404 };
    if (user === null || user === '') return notAuthenticated();
    let segments: string[];
    try {
      segments = path
        .slice('/remote.php/dav'.length)
        .split('/')
        .filter((s) => s !== '')
        .map((s) => decodeURIComponent(s));
    } catch {
      return davError(400, 'BadRequest', 'Invalid path');
    }
    const [root, owner, ...rest] = segments;
    const base = this.#baseUrl();
    if (root === undefined) {
      if (method === 'SEARCH') return this.files.handleSearch(user, body);
      return this.calendars.handleRoot(method, user, body);
    }
    if (owner === undefined) return davError(404, 'NotFound', `File with name ${root} could not be located`);
    switch (root) {
      case 'files':
        return this.files.handleFiles(method, owner, rest, user, headers, body, base);
      case 'trashbin':
        return this.files.handleTrash(method, owner, rest, user, headers, body, base);
      case 'versions':
        return this.files.handleVersions(method, owner, rest, user, headers, body, base);
      case 'principals':
        return owner === 'users' && rest[0] !== undefined
          ? this.calendars.handlePrincipal(method, rest[0], user, body)
          : davError(404, 'NotFound', 'Principal not found');
      case 'calendars':
        return this.calendars.handleCalendars(method, owner, rest, user, headers, body);
      default:
        return davError(404, 'NotFound', `File with name ${root} could not be located`);
    }
  }
}
