// Each store's transition contenders: leasehold, the bare compare-and-set of the same shape, and
// the peers that run on that store. A module answers `contenders({ server, libs, ttlMs,
// maxInFlight })` and may answer `probe(server)`: a cumulative count of requests the server got.
import * as dynamodb from './dynamodb.mjs';
import * as etcd from './etcd.mjs';
import * as mysql from './mysql.mjs';
import * as nats from './nats.mjs';
import * as postgres from './postgres.mjs';
import * as redis from './redis.mjs';
import * as s3 from './s3.mjs';
import * as sqlite from './sqlite.mjs';
import * as zookeeper from './zookeeper.mjs';

export const CONTENDERS = { sqlite, postgres, mysql, redis, etcd, dynamodb, nats, s3, zookeeper };
