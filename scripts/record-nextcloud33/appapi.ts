// AppAPI: registration through manual_install and the lifecycle calls, the OCS calls the product
// makes as the ExApp, and the Talk bot registration.
import { jsonInfoRoutes, type Manifest } from '../../lib/appapi/manifest.ts';
import { redactReceived, sleep } from './capture.ts';
import { APP_ID, ROUTE, type Context, type Steps } from './context.ts';

const V1 = '/ocs/v1.php/apps/app_api';

async function lifecycle(ctx: Context, label: string, steps: Steps, action: () => Promise<string>): Promise<void> {
  const out = await action();
  await sleep(1500);
  steps[`${label}-occ-output`] = out;
  steps[`${label}-exapp-received`] = ctx.exApp.drain().map((r) => redactReceived(ctx.redactor, r));
}

export async function recordAppApi(ctx: Context, manifest: Manifest): Promise<{ botSecret: string }> {
  await ctx.nc.occ('app_api:app:unregister', APP_ID, '--force').catch(() => '');
  ctx.exApp.drain();
  const steps: Steps = {};
  steps['01-occ-daemon-list'] = await ctx.occ('app_api:daemon:list');
  const info = {
    id: APP_ID,
    name: manifest.name,
    daemon_config_name: 'manual_install',
    version: ctx.appVersion,
    secret: ctx.appSecret,
    port: ctx.exApp.port,
    routes: jsonInfoRoutes(manifest),
  };
  steps['02-json-info'] = info;
  await lifecycle(ctx, '02-register', steps, () =>
    ctx.occ('app_api:app:register', APP_ID, 'manual_install', '--json-info', JSON.stringify(info), '--wait-finish'),
  );
  steps['02-register-init-progress-reports'] = ctx.initReports.splice(0);
  steps['03-occ-app-list'] = await ctx.occ('app_api:app:list');
  steps['04-ex-app-state-enabled'] = (await ctx.appApi('', 'GET', `${V1}/ex-app/state?format=json`)).exchange;
  await lifecycle(ctx, '05-disable', steps, () => ctx.occ('app_api:app:disable', APP_ID));
  steps['05-ex-app-state-disabled'] = (await ctx.appApi('', 'GET', `${V1}/ex-app/state?format=json`)).exchange;
  steps['05-ocs-while-disabled'] = (await ctx.appApi('alice', 'GET', '/ocs/v2.php/cloud/user?format=json')).exchange;
  await lifecycle(ctx, '06-enable', steps, () => ctx.occ('app_api:app:enable', APP_ID));
  steps['06-ex-app-state-enabled-again'] = (await ctx.appApi('', 'GET', `${V1}/ex-app/state?format=json`)).exchange;
  steps['07-status-100-again-after-enable'] = (await ctx.appApi('', 'PUT', `${V1}/ex-app/status`, { progress: 100 })).exchange;
  ctx.write(
    'appapi-33-registration-lifecycle.json',
    {
      what: 'ExApp registration through manual_install (occ app_api:app:register --json-info --wait-finish), the heartbeat/init/enabled calls as the ExApp received them, init progress, ex-app/state, occ disable (enabled=0) and enable (enabled=1)',
    },
    steps,
  );

  const ocs: Steps = {};
  ocs['cloud-user-as-alice'] = (await ctx.appApi('alice', 'GET', '/ocs/v2.php/cloud/user?format=json')).exchange;
  ocs['cloud-user-as-nobody'] = (await ctx.appApi('', 'GET', '/ocs/v2.php/cloud/user?format=json')).exchange;
  ocs['capabilities-as-alice'] = (await ctx.appApi('alice', 'GET', '/ocs/v2.php/cloud/capabilities?format=json')).exchange;
  ocs['users-list-as-system'] = (await ctx.appApi('', 'GET', `${V1}/api/v1/users?format=json`)).exchange;
  ocs['nextcloud-url'] = (await ctx.appApi('', 'GET', `${V1}/api/v1/info/nextcloud_url?format=json`)).exchange;
  ocs['config-set'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/ex-app/config`, { configKey: 'capture_key', configValue: 'value-1' })).exchange;
  ocs['config-set-sensitive'] = (
    await ctx.appApi('', 'POST', `${V1}/api/v1/ex-app/config`, { configKey: 'capture_sensitive', configValue: 'hidden-1', sensitive: 1 })
  ).exchange;
  ocs['config-get-values'] = (
    await ctx.appApi('', 'POST', `${V1}/api/v1/ex-app/config/get-values`, { configKeys: ['capture_key', 'capture_sensitive', 'missing_key'] })
  ).exchange;
  ocs['config-delete'] = (await ctx.appApi('', 'DELETE', `${V1}/api/v1/ex-app/config`, { configKeys: ['capture_key', 'capture_sensitive'] })).exchange;
  ocs['preference-set-alice'] = (await ctx.appApi('alice', 'POST', `${V1}/api/v1/ex-app/preference`, { configKey: 'tone', configValue: 'friendly' })).exchange;
  ocs['preference-get-alice'] = (await ctx.appApi('alice', 'POST', `${V1}/api/v1/ex-app/preference/get-values`, { configKeys: ['tone', 'missing'] })).exchange;
  ocs['preference-as-system'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/ex-app/preference/get-values`, { configKeys: ['tone'] })).exchange;
  ocs['log-level-2'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/log`, { level: 2, message: 'capture: a warning from the ExApp' })).exchange;
  ocs['notification-to-alice'] = (
    await ctx.appApi('alice', 'POST', `${V1}/api/v1/notification`, {
      params: {
        object: 'app_api',
        object_id: 'capture-1',
        subject_type: 'app_api_ex_app',
        subject_params: { rich_subject: 'Capture', rich_subject_params: {}, rich_message: 'A notification', rich_message_params: {} },
      },
    })
  ).exchange;
  ocs['top-menu-register'] = (
    await ctx.appApi('', 'POST', `${V1}/api/v1/ui/top-menu`, { name: 'main', displayName: 'Talk AI', icon: 'img/app.svg', adminRequired: 0 })
  ).exchange;
  ocs['top-menu-get'] = (await ctx.appApi('', 'GET', `${V1}/api/v1/ui/top-menu?name=main&format=json`)).exchange;
  ocs['top-menu-delete'] = (await ctx.appApi('', 'DELETE', `${V1}/api/v1/ui/top-menu`, { name: 'main' })).exchange;
  ocs['wrong-secret'] = (
    await ctx.appApi('alice', 'GET', '/ocs/v2.php/cloud/user?format=json', undefined, {
      'AUTHORIZATION-APP-API': Buffer.from('alice:not-the-secret-of-this-app').toString('base64'),
    })
  ).exchange;
  ctx.write(
    'appapi-33-ocs.json',
    {
      what: 'OCS calls as the ExApp with AppAPI auth: cloud/user, capabilities, users, nextcloud_url, ex-app config and preferences, log, notification, top menu, a wrong secret',
    },
    ocs,
  );

  const bot: Steps = {};
  const body = { name: 'Talk AI', route: `/${ROUTE}`, description: 'Talk AI assistant' };
  const reg = await ctx.appApi('', 'POST', `${V1}/api/v1/talk_bot?format=json`, body);
  const botSecret = String(reg.json?.ocs?.data?.secret ?? '');
  ctx.redactor.secret(botSecret, '<REDACTED_BOT_SECRET>');
  bot['register'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/talk_bot?format=json`, body)).exchange;
  bot['register-again-same-secret'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/talk_bot?format=json`, body)).exchange;
  bot['register-missing-route'] = (await ctx.appApi('', 'POST', `${V1}/api/v1/talk_bot?format=json`, { name: 'x', description: 'y' })).exchange;
  bot['occ-talk-bot-list'] = await ctx.occ('talk:bot:list', '--output=json');
  bot['admin-bot-list'] = (await ctx.asUser('admin', 'GET', '/ocs/v2.php/apps/spreed/api/v1/bot/admin')).exchange;
  bot['unregister-unknown-route'] = (await ctx.appApi('', 'DELETE', `${V1}/api/v1/talk_bot?format=json`, { route: '/no_such_route' })).exchange;
  ctx.write(
    'appapi-33-talk-bot-register.json',
    { what: 'POST /ocs/v1.php/apps/app_api/api/v1/talk_bot (twice: the same secret), a bad request, occ talk:bot:list and the admin bot list' },
    bot,
  );
  return { botSecret };
}
