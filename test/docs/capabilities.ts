import { LIMITS } from '../../src/index.js';

/** The stores of the capabilities table and the file that declares each one's capabilities. */
export const STORE_SOURCES: Record<string, string> = {
  SQLite: 'sqlite/sqlite-store.ts',
  PostgreSQL: 'postgres/postgres-store.ts',
  'MySQL / MariaDB': 'mysql/mysql-store.ts',
  Redis: 'redis/redis-store.ts',
  etcd: 'etcd/etcd-store.ts',
  DynamoDB: 'dynamodb/dynamodb-store.ts',
  'NATS JetStream KV': 'nats/nats-store.ts',
  ZooKeeper: 'zookeeper/zookeeper-store.ts',
  S3: 's3/s3-store.ts',
  memory: 'memory/memory-store.ts',
};

/** `key: expression` of a store's `capabilities = Object.freeze({ … })`, comments left out. */
export function declaredCapabilities(source: string): Map<string, string> {
  const body = /capabilities(?::[^=]*)?\s*=\s*Object\.freeze\(\{([\s\S]*?)\}\)/.exec(source);
  if (!body) throw new Error('no capabilities = Object.freeze({ … }) found');
  const declared = new Map<string, string>();
  for (const line of body[1]!.split('\n')) {
    const entry = /^\s*(\w+):\s*(.+?),?\s*$/.exec(line.replace(/\/\/.*$/, ''));
    if (entry) declared.set(entry[1]!, entry[2]!);
  }
  return declared;
}

/** What a literal expression says, as the table writes it; `undefined` for anything computed. */
export function literal(expression: string | undefined): string | undefined {
  if (expression === undefined) return '—';
  if (expression === 'LIMITS.groupMaxSize') return String(LIMITS.groupMaxSize);
  if (/^'[^']*'$/.test(expression)) return expression.slice(1, -1);
  if (/^(true|false|\d+)$/.test(expression)) return expression;
  return undefined;
}
