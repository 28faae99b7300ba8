// A TCP port on 127.0.0.1 that was free a moment ago: the one every private server starts on.
export { freePort } from '../../src/cli/harness/servers/process-tree.js';
