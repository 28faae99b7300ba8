// The sections of `npm run bench`, in the order they run for each store, and the stores each
// one applies to.
import { failover, failoverStores } from './failover.mjs';
import { data } from './data.mjs';
import { fair } from './fair.mjs';
import { groups } from './groups.mjs';
import { permits } from './permits.mjs';
import { renewMany } from './renew-many.mjs';
import { stalls } from './stalls.mjs';
import { stop } from './stop.mjs';
import { transition } from './transition.mjs';

export const SECTION_RUNNERS = {
  transition: { run: transition, appliesTo: () => true },
  'renew-many': { run: renewMany, appliesTo: () => true },
  stop: { run: stop, appliesTo: () => true },
  permits: { run: permits, appliesTo: () => true },
  groups: { run: groups, appliesTo: () => true },
  fair: { run: fair, appliesTo: () => true },
  data: { run: data, appliesTo: () => true },
  failover: { run: failover, appliesTo: (store, quick) => failoverStores(quick).includes(store) },
  stalls: { run: stalls, appliesTo: (store) => store === 'sqlite' },
};
