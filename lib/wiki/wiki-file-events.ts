// File events for index.md on Nextcloud 30+: webhook_listeners tells us at once that a page may have
// changed, instead of the next etag scan finding it. The event only triggers a scan of the registered
// roots (S16): its user and path are never used, so a delivery we did not expect costs one scan.
import type { Registrar } from '../appapi/enabled-handler.ts';
import type { WebhookListeners, WebhookListenerSpec } from '../appapi/webhook-listeners.ts';
import type { Logger } from '../log/logger.ts';

/** Where webhook_listeners delivers (through AppAPI, not its browser proxy: no declared route matches it). */
export const WIKI_FILE_EVENTS_PATH = '/wiki_file_events';

const NODE = 'OCP\\Files\\Events\\Node\\';
/** Pages are .md, .txt and .json in someone's files; other writes (images, office files) are not sent at all. */
const PAGE_PATH = '/^\\/[^\\/]+\\/files\\/.*\\.(md|txt|json)$/i';

/**
 * A create fires NodeCreatedEvent and NodeWrittenEvent, a copy the same on the target, so Written covers
 * both; a rename carries `source` and `target` instead of `node` (test/fixtures/nextcloud33/webhook-listeners.json).
 */
export const WIKI_FILE_LISTENERS: WebhookListenerSpec[] = [
  { event: `${NODE}NodeWrittenEvent`, uri: WIKI_FILE_EVENTS_PATH, eventFilter: { 'event.node.path': PAGE_PATH } },
  { event: `${NODE}NodeDeletedEvent`, uri: WIKI_FILE_EVENTS_PATH, eventFilter: { 'event.node.path': PAGE_PATH } },
  {
    event: `${NODE}NodeRenamedEvent`,
    uri: WIKI_FILE_EVENTS_PATH,
    eventFilter: { $or: [{ 'event.source.path': PAGE_PATH }, { 'event.target.path': PAGE_PATH }] },
  },
];

/** Registers the file listeners on enable where webhook_listeners exists (NC 30+); on NC 29 it only logs. The 60 s scan runs either way. */
export function wikiFileEventsRegistrar(deps: { listeners: WebhookListeners; logger: Logger }): Registrar {
  return {
    name: 'the wiki file events',
    register: async () => {
      let offered: boolean;
      try {
        offered = await deps.listeners.register(WIKI_FILE_LISTENERS);
      } catch (err) {
        // Optional: a failure here must not make AppAPI disable the app; the scan covers manual edits.
        deps.logger.warn({ err }, 'wiki file events could not be registered; index.md follows manual edits through the 60 s scan');
        return;
      }
      if (offered) deps.logger.info({ listeners: WIKI_FILE_LISTENERS.length }, 'wiki file events registered with webhook_listeners');
      else deps.logger.info('webhook_listeners is not offered; index.md follows manual edits through the 60 s scan');
    },
    unregister: async () => {
      // webhook_listeners keeps an ExApp's listeners when it is disabled: remove them, or it would keep queueing jobs.
      const removed = await deps.listeners.removeAll();
      deps.logger.info({ removed }, 'wiki file events unregistered');
    },
  };
}
