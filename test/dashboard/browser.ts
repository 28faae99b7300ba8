import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium: the tests drive it with playwright-core, never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here, or `null` when they can. */
export const chromiumMissing: string | null = existsSync(CHROMIUM)
  ? null
  : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
