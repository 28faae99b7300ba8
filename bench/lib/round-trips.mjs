// How many requests a store's server received: a cumulative counter per store, read before and
// after a stretch of work that runs alone. Where the transition section has a probe (PostgreSQL,
// MariaDB, etcd, ZooKeeper) it is used. Redis's probe counts the commands a Lua script runs as
// well, so here the requests ioredis sends are counted instead (a pipeline as one); SQLite has no
// server, so the statements run are counted; NATS reports the messages it received; DynamoDB and
// S3 are HTTP, one request per call, counted in this process.
import http from 'node:http';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { CONTENDERS } from './contenders/index.mjs';

/** What the counter counts, per store, for the tables. */
export const ROUND_TRIP_UNITS = {
  sqlite: 'statements run (the release watch’s polls included)',
  postgres: 'statements sent',
  mysql: 'the server’s Questions',
  redis: 'requests ioredis sent (a pipeline as one)',
  etcd: 'gRPC calls the server started',
  dynamodb: 'HTTP requests',
  nats: 'messages the server received',
  s3: 'HTTP requests',
  zookeeper: 'requests the server received',
};

/** `{ read(), close() }` for `store`'s server; `read()` answers the cumulative count. */
export async function roundTrips(store, server) {
  if (store === 'redis') return counter(redisRequests);
  if (CONTENDERS[store]?.probe) return CONTENDERS[store].probe(server);
  if (store === 'sqlite') return counter(sqliteStatements);
  if (store === 'dynamodb' || store === 's3') return counter(httpRequests);
  if (store === 'nats') return natsMessages(server);
  throw new Error(`no request counter for ${store}`);
}

const counter = (install) => {
  const count = install();
  return { read: async () => count.value, close: async () => {} };
};

// Installed once and left in place: the counters only add a number per call.
let statements;
function sqliteStatements() {
  if (statements) return statements;
  statements = { value: 0 };
  const db = new Database(':memory:');
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1'));
  db.close();
  for (const method of ['run', 'get', 'all', 'iterate']) {
    const original = proto[method];
    proto[method] = function counted(...args) {
      statements.value++;
      return original.apply(this, args);
    };
  }
  return statements;
}

// ioredis sends a pipeline's commands through `sendCommand` with the pipeline's stream.
let redisSent;
function redisRequests() {
  if (redisSent) return redisSent;
  redisSent = { value: 0 };
  const send = Redis.prototype.sendCommand;
  Redis.prototype.sendCommand = function counted(command, stream, ...rest) {
    if (!stream) redisSent.value++;
    return send.call(this, command, stream, ...rest);
  };
  const idle = new Redis({ lazyConnect: true });
  const pipeline = Object.getPrototypeOf(idle.pipeline());
  idle.disconnect();
  const exec = pipeline.exec;
  pipeline.exec = function counted(...args) {
    redisSent.value++;
    return exec.apply(this, args);
  };
  return redisSent;
}

// The AWS SDK's handler takes `http.request` when it makes its agent, at a client's first
// request: stores opened after this is installed are counted.
let requests;
function httpRequests() {
  if (requests) return requests;
  requests = { value: 0 };
  const original = http.request;
  http.request = function counted(...args) {
    requests.value++;
    return original.apply(this, args);
  };
  return requests;
}

function natsMessages(server) {
  return {
    read: async () => {
      const varz = await (await globalThis.fetch(`${server.monitoring}/varz`)).json();
      return varz.in_msgs;
    },
    close: async () => {},
  };
}
