// AppAPI's OCS endpoints the Talk side needs: Talk bot registration (the bot's secret comes from
// AppAPI) and a user's notification. Registration acts as nobody (system), the notification as the user.
import type { NextcloudClient, NextcloudSession } from './client.ts';

/** Registers (idempotently: AppAPI reuses the secret) a Talk bot for our ExApp route `/route`. */
export async function registerTalkBot(
  client: NextcloudClient,
  body: { name: string; route: string; description: string },
): Promise<{ id: string; secret: string } | null> {
  return client.system().ocs<{ id: string; secret: string } | null>('POST', '/ocs/v1.php/apps/app_api/api/v1/talk_bot', { body: { ...body } });
}

/** Removes the Talk bot of `route`; AppAPI answers 404 when there is none. */
export async function unregisterTalkBot(client: NextcloudClient, route: string): Promise<void> {
  await client.system().ocs('DELETE', '/ocs/v1.php/apps/app_api/api/v1/talk_bot', { body: { route } });
}

/** An AppAPI notification to `session`'s user. */
export async function sendAppApiNotification(session: NextcloudSession, notification: object): Promise<void> {
  await session.ocs('POST', '/ocs/v1.php/apps/app_api/api/v1/notification', { body: notification });
}
