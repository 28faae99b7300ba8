// Which build of leasehold to measure: ./dist by default, or another compiled copy (`--dist DIR`),
// e.g. the last commit built in a temp folder while the working tree is mid-rewrite.
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const DEFAULT_DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

export function loadLibrary(dist = DEFAULT_DIST) {
  return import(pathToFileURL(resolve(dist, 'index.js')).href);
}
