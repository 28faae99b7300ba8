import type { EventEmitter } from 'node:events';

/**
 * Calls every listener of `event`, each on its own: one that throws neither stops the others nor
 * unwinds leasehold's own bookkeeping (a deadline check, a heartbeat). The error is rethrown on the
 * next tick, where it surfaces as an uncaught exception, as Node does for `EventTarget` listeners.
 */
export function safeEmit(emitter: EventEmitter, event: string | symbol, args: unknown[]): boolean {
  const listeners = emitter.rawListeners(event) as ((...a: unknown[]) => unknown)[];
  for (const listener of listeners) {
    try {
      listener.apply(emitter, args);
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }
  return listeners.length > 0;
}
