import type { FleetView, WireRecord } from '../../live/wire-types.js';

// The messages the page reads from `/events`, as it reads them: the server's types live in
// ../wire.ts, which the page cannot import (it reaches Node modules); a type test checks that what
// the server sends fits these. The records and the fleet view are the server's own types, from
// the pure module both import.

export type { FleetView, WireRecord };

/** `[owner, token, from, to, end]`: one grant seen, `to` `null` while it lasts. */
export type WireSpan = [string, number, number, number | null, string | null];

/** The settings the script needs (the server writes the rest into the HTML). */
export interface PageSettings {
  readonly skewMs: number;
  /** Whether the force-release action is on. */
  readonly admin: boolean;
}

export interface ChangeEvent {
  readonly type: string;
  readonly at: number;
  readonly resource: string;
  readonly owner: string;
  readonly token: number;
  readonly previousOwner?: string;
}

/** The first message on a connection: everything the server knows. */
export interface Snapshot {
  readonly serverNow: number;
  readonly settings: PageSettings;
  readonly records: readonly WireRecord[];
  readonly spans: Readonly<Record<string, readonly WireSpan[]>>;
  readonly events: readonly ChangeEvent[];
  readonly fleet: FleetView;
  readonly error: string | null;
}

/** A message after each listing: what changed. */
export interface Update {
  readonly serverNow: number;
  readonly records: readonly WireRecord[];
  readonly removed: readonly string[];
  readonly spans: Readonly<Record<string, readonly WireSpan[]>>;
  readonly events: readonly ChangeEvent[];
  readonly fleet: FleetView;
  readonly error: string | null;
}
