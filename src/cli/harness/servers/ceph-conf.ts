import { randomUUID } from 'node:crypto';

/**
 * The configuration of a private Ceph in `dir`: authentication off, one monitor, one memstore OSD
 * of at most 128 MiB, pools of one placement group and one replica, the monitor's proposal
 * interval cut from 1 s to 20 ms (radosgw creates its pools one by one at start), and a radosgw
 * with few threads on `rgwPort`.
 */
export function cephConf(dir: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${randomUUID()}
mon host = v2:127.0.0.1:${monPort}
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms bind ipv6 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
paxos propose interval = 0.02
paxos min wait = 0.01
mon warn on pool no redundancy = false
osd objectstore = memstore
memstore device bytes = 134217728
osd op num shards = 1
osd op num threads per shard = 2
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
pid file = ${dir}/run/$name.pid
crash dir = ${dir}/crash
keyring = ${dir}/keyring
mon data = ${dir}/mon
osd data = ${dir}/osd0
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw data = ${dir}/rgw
rgw thread pool size = 32
rgw enable usage log = false
rgw dynamic resharding = false
`;
}
