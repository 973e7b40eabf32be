/** what the server wrote into the page (src/ui/assets.ts) */
import type { PageSettings } from '../wire';

export const settings: PageSettings = JSON.parse(document.getElementById('berth-settings')?.textContent ?? '{}') as PageSettings;

/** host[:port] clients pull from: http.host when set, else the address bar's */
export const registryHost = (): string => settings.host ?? location.host;
/** clients reach the registry over plain HTTP: http.host's scheme when set, else the address bar's */
export const plainHTTP = (): boolean => settings.plainHTTP ?? location.protocol === 'http:';
