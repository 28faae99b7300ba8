/** A duration as people read it: `850ms`, `12.5s`, `3.2m`, `1.5h`. */
export function fmtMs(ms: number): string {
  const a = Math.abs(ms);
  if (a < 1000) return `${Math.round(ms)}ms`;
  if (a < 60000) return `${Math.round(ms / 100) / 10}s`;
  if (a < 3600000) return `${Math.round(ms / 6000) / 10}m`;
  return `${Math.round(ms / 360000) / 10}h`;
}

/** A time of day on this machine's clock, to the millisecond. */
export function fmtTime(t: number): string {
  const d = new Date(t);
  const p = (n: number, w?: number): string => String(n).padStart(w || 2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

/** A hue for a name (FNV-1a, then a finaliser), the same on every page load. */
function hue(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % 360;
}

/** An owner's colour. */
export function colour(owner: string, alpha?: number): string {
  return `hsla(${hue(owner)}, 62%, 48%, ${alpha === undefined ? 1 : alpha})`;
}
