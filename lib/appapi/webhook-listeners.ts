// Nextcloud's webhook_listeners app (NC 30+) as an ExApp uses it: registrations made with AppAPI's
// headers and the empty user are stored with our app id, and events are delivered through AppAPI to a
// path of ours (test/fixtures/nextcloud33/webhook-listeners.json). NC 29 has no such app: its OCS route
// answers 404/998 there and when an admin disabled it, which we read as "not offered".
import { deleteWebhooksByApp, registerWebhook } from '../nextcloud/appapi.ts';
import type { NextcloudClient } from '../nextcloud/client.ts';
import { NextcloudNotFoundError } from '../nextcloud/errors.ts';

export interface WebhookListenerSpec {
  /** Event class, e.g. `OCP\Files\Events\Node\NodeWrittenEvent`. */
  event: string;
  /** Our path; a leading `/` makes webhook_listeners deliver through AppAPI to the ExApp. */
  uri: string;
  /** webhook_listeners' Mongo-like filter on the serialised event; a string `/re/flags` is a regex. */
  eventFilter?: Record<string, unknown>;
}

export class WebhookListeners {
  readonly #nextcloud: NextcloudClient;
  readonly #appId: string;

  constructor(nextcloud: NextcloudClient, appId: string) {
    this.#nextcloud = nextcloud;
    this.#appId = appId;
  }

  /**
   * Removes every listener of this app. Returns false when the server offers no webhook_listeners.
   * Registering starts with it, so a re-enable never leaves a listener twice.
   */
  async removeAll(): Promise<boolean> {
    try {
      await deleteWebhooksByApp(this.#nextcloud, this.#appId);
      return true;
    } catch (err) {
      if (err instanceof NextcloudNotFoundError) return false;
      throw err;
    }
  }

  /** Registers each listener; false when the server offers no webhook_listeners (nothing registered). */
  async register(specs: WebhookListenerSpec[]): Promise<boolean> {
    if (!(await this.removeAll())) return false;
    for (const s of specs) {
      await registerWebhook(this.#nextcloud, s);
    }
    return true;
  }
}
