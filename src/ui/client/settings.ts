/** what the server wrote into the page (src/ui/assets.ts PageSettings) */
export interface Settings {
  prefix: string;
  host?: string;
  auth: 'none' | 'htpasswd' | 'token';
  deletes: boolean;
  readOnly: boolean;
  version: string;
}

export const settings: Settings = JSON.parse(document.getElementById('berth-settings')?.textContent ?? '{}') as Settings;

/** host[:port] clients pull from: http.host when set, else the address bar's */
export const registryHost = (): string => settings.host ?? location.host;
