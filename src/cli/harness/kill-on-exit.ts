const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Nothing a run started outlives it: `kill` runs when the process exits from anywhere (it must be
 * synchronous), and `interrupted` on a Ctrl-C, SIGTERM or SIGHUP (it ends the process). Returns
 * the uninstaller.
 */
export function killOnExit(
  kill: () => void,
  interrupted: (signal: NodeJS.Signals) => void,
): () => void {
  process.on('exit', kill);
  for (const signal of SIGNALS) process.on(signal, interrupted);
  return () => {
    process.off('exit', kill);
    for (const signal of SIGNALS) process.off(signal, interrupted);
  };
}
