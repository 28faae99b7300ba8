// Types of bundle-page.mjs, for the tests that bundle the page script.
import type { Plugin } from 'esbuild';

/** The page script's entry, relative to the repository. */
export declare const PAGE_ENTRY: string;
/** The generated module holding the bundle, relative to the repository. */
export declare const PAGE_BUNDLE: string;
/** The page script as one classic script, and the files it was made of (relative, sorted). */
export declare function bundlePage(
  plugins?: Plugin[],
): Promise<{ readonly code: string; readonly inputs: string[] }>;
/** The text of the generated module holding `code`. */
export declare function bundleModule(code: string): string;
