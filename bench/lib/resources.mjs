// The wanted set shared by the workers and the coordinator: r/000000, r/000001, …
export const RESOURCE_PREFIX = 'r/';

export function resourceNames(count) {
  return Array.from({ length: count }, (_, i) => RESOURCE_PREFIX + String(i).padStart(6, '0'));
}
