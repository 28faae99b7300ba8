import { expect, it } from 'vitest';
import { HistoryRecorder } from '../../src/cli/harness/recorder.js';

it('a worker’s process report (memory, descriptors, loop delay) is no belief and no record of the history', () => {
  const recorder = new HistoryRecorder();
  recorder.record({ e: 'process', w: 'w01', at: 1, rssBytes: 5e7, fds: 20, loopMaxMs: 3 });
  recorder.record({ e: 'acquired', w: 'w01', resource: 'r', token: 1, at: 2, until: 10 });
  const history = recorder.history();
  expect(history).toHaveLength(1);
  expect(history[0]).toMatchObject({ type: 'belief', resource: 'r', owner: 'w01', token: 1 });
});
