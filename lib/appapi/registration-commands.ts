import { jsonInfoRoutes, type Manifest } from './manifest.ts';

export interface RegistrationInput {
  manifest: Manifest;
  appHost: string;
  appPort: number;
  nextcloudUrl: string;
  /** Where the shell reads the secret from; the secret itself is never printed (S1). */
  secretFrom: { file: string } | { envVar: string };
}

function shellSingleQuote(s: string): string {
  return `'${s.replace(/'/g, `'"'"'`)}'`;
}

/** The two occ commands that connect a manually started ExApp to a Nextcloud. */
export function registrationCommands(input: RegistrationInput): string[] {
  const host = input.appHost === '0.0.0.0' ? '127.0.0.1' : input.appHost;
  const placeholder = '__EDUCAI_SECRET__';
  const info = {
    id: input.manifest.id,
    name: input.manifest.name,
    daemon_config_name: 'manual_install',
    version: input.manifest.version,
    secret: placeholder,
    port: input.appPort,
    routes: jsonInfoRoutes(input.manifest),
  };
  const secretExpr = 'file' in input.secretFrom ? `$(cat ${shellSingleQuote(input.secretFrom.file)})` : `\${${input.secretFrom.envVar}}`;
  const [before, after] = JSON.stringify(info).split(`"${placeholder}"`) as [string, string];
  const jsonArg = `${shellSingleQuote(`${before}"`)}"${secretExpr}"${shellSingleQuote(`"${after}`)}`;
  return [
    `occ app_api:daemon:register manual_install "Manual Install" manual-install http ${host} ${input.nextcloudUrl}`,
    `occ app_api:app:register ${input.manifest.id} manual_install --json-info ${jsonArg} --wait-finish`,
  ];
}
