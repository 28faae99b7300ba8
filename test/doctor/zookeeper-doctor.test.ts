import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diagnoseStore, openStore, type Diagnosis, type LeaseStore } from '../../src/index.js';
import { describeServer } from '../harness/describe-server.js';
import { rejection } from '../harness/expect-error.js';
import { freePort } from '../harness/ports.js';
import {
  ZookeeperEnsemble,
  ZookeeperServer,
  zookeeperUnavailable,
  type ZookeeperConfigOptions,
} from '../harness/zookeeper-server.js';

/** The ids and levels of a diagnosis, most serious first, for one assertion. */
const found = (d: Diagnosis): string[] => d.findings.map((f) => `${f.id} ${f.level}`);

/** Every word the doctor reads; the harness's own default allows `srvr` alone of them. */
const ALL_WORDS = 'srvr,conf,mntr';

// Each server or ensemble is started once, in its own block, so that no two run at once.
describeServer('zookeeper doctor', zookeeperUnavailable(), () => {
  const stores: LeaseStore[] = [];
  const open = async (hosts: string, params = ''): Promise<LeaseStore> => {
    const store = await openStore(`zookeeper://${hosts}/doctor?timeoutMs=1000${params}`);
    stores.push(store);
    return store;
  };
  /** Closes the stores of a block before its server stops. */
  const closeStores = async (): Promise<void> => {
    await Promise.allSettled(stores.splice(0).map((s) => s.close()));
  };

  /** A standalone server for the block's tests, started before them and stopped after. */
  const standalone = (options: ZookeeperConfigOptions): (() => ZookeeperServer) => {
    let server: ZookeeperServer;
    beforeAll(async () => {
      server = await ZookeeperServer.start(options);
    });
    afterAll(async () => {
      await closeStores();
      await server?.stop();
    });
    return () => server;
  };

  describe('a standalone server that acknowledges without fsync (forceSync=no)', () => {
    const server = standalone({ fourLetterWords: ALL_WORDS });

    it('is zookeeper.force-sync-off (unsafe) and zookeeper.single-server (warning)', async () => {
      const diagnosis = await diagnoseStore(await open(server().endpoint));
      expect(found(diagnosis)).toEqual([
        'zookeeper.force-sync-off unsafe',
        'zookeeper.single-server warning',
      ]);
      const [sync, single] = diagnosis.findings;
      expect(sync!.observed).toMatch(/transaction log flush(es)? since it started, 0 fsyncs/);
      expect(sync!.observed).toContain(server().endpoint);
      expect(sync!.fix).toContain('forceSync=no');
      expect(single!.observed).toContain('Mode: standalone');
      expect(diagnosis.checked.join('\n')).toMatch(/srvr, conf, mntr.*\n.*zk_cnt_fsynctime/);
    });

    it('gives STORE_UNAVAILABLE within the deadline when paused, not a hang', async () => {
      const store = await open(server().endpoint);
      server().pause();
      try {
        const error = await rejection(diagnoseStore(store), 10_000);
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.message).toMatch(
          /zookeeper diagnose failed: no server answered: .*no answer within 1000 ms/,
        );
      } finally {
        server().resume();
      }
    });
  });

  describe("a standalone server with the harness's whitelist (ruok,srvr,stat)", () => {
    const server = standalone({});

    it('is zookeeper.single-server, and zookeeper.settings-unread names the whitelist', async () => {
      const diagnosis = await diagnoseStore(await open(server().endpoint));
      expect(found(diagnosis)).toEqual([
        'zookeeper.single-server warning',
        'zookeeper.settings-unread unknown',
      ]);
      const unread = diagnosis.findings[1]!;
      expect(unread.observed).toContain('mntr is not in the whitelist');
      expect(unread.fix).toContain('4lw.commands.whitelist=srvr,conf,mntr');
    });
  });

  describe('a three-server ensemble with forceSync=yes and every word allowed', () => {
    let ensemble: ZookeeperEnsemble;
    beforeAll(async () => {
      ensemble = await ZookeeperEnsemble.start(3, { fourLetterWords: ALL_WORDS, forceSync: true });
    });
    afterAll(async () => {
      await closeStores();
      await ensemble?.stop();
    });
    const hosts = (): string => ensemble.members.map((m) => m.endpoint).join(',');

    it('is clean, read with conf and mntr on each server', async () => {
      const diagnosis = await diagnoseStore(await open(hosts()));
      expect(diagnosis.findings).toEqual([]);
      expect(diagnosis.checked[0]).toBe(
        `srvr, conf, mntr (four-letter words) on ${hosts().replaceAll(',', ', ')}`,
      );
    });

    it('names a server of the connect string that does not answer: zookeeper.server-unanswered', async () => {
      const dead = `127.0.0.1:${await freePort()}`;
      const diagnosis = await diagnoseStore(await open(`${hosts()},${dead}`));
      expect(found(diagnosis)).toEqual(['zookeeper.server-unanswered unknown']);
      expect(diagnosis.findings[0]!.observed).toMatch(new RegExp(`^${dead}: .*ECONNREFUSED`));
    });
  });

  describe('a two-server ensemble with forceSync=no that allows srvr and mntr, not conf', () => {
    let ensemble: ZookeeperEnsemble;
    beforeAll(async () => {
      ensemble = await ZookeeperEnsemble.start(2, { fourLetterWords: 'srvr,mntr' });
    });
    afterAll(async () => {
      await closeStores();
      await ensemble?.stop();
    });

    it('is zookeeper.even-voters, read from /zookeeper/config, and zookeeper.force-sync-off on both', async () => {
      const hosts = ensemble.members.map((m) => m.endpoint);
      const diagnosis = await diagnoseStore(await open(hosts.join(',')));
      expect(found(diagnosis)).toEqual([
        'zookeeper.force-sync-off unsafe',
        'zookeeper.even-voters warning',
      ]);
      const [sync, even] = diagnosis.findings;
      for (const host of hosts) expect(sync!.observed).toContain(`${host}: `);
      expect(even!.observed).toBe('/zookeeper/config: 2 voting servers');
      expect(even!.risk).toContain('either one failing stops every grant');
      expect(diagnosis.checked).toContain("/zookeeper/config (the ensemble's membership)");
    });
  });
});
