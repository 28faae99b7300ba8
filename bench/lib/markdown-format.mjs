// Formatting shared by the tables of latest.md: store titles, numbers, ratios, milliseconds, and a
// padded Markdown table.

const STORE_TITLES = {
  sqlite: 'SQLite',
  postgres: 'PostgreSQL',
  mysql: 'MySQL (MariaDB)',
  redis: 'Redis',
  etcd: 'etcd',
  dynamodb: 'DynamoDB (dynalite)',
  nats: 'NATS JetStream KV',
  s3: 'S3 (Ceph radosgw)',
  zookeeper: 'ZooKeeper',
};
export const SUPERSCRIPTS = ['¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];

export const title = (store) => STORE_TITLES[store] ?? store;
export const int = (x) =>
  x === null || x === undefined ? '—' : Math.round(x).toLocaleString('en');
export const num = (x, digits = 1) =>
  x === null || x === undefined || !Number.isFinite(x) ? '—' : x.toFixed(digits);
export const ratio = (s) => (s ? `${num(s.median, 2)} (${num(s.min, 2)}–${num(s.max, 2)})` : '—');
export const ms = (x) => (x === null || x === undefined ? '—' : `${num(x, x < 10 ? 1 : 0)} ms`);

export function table(header, rows) {
  const cells = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  const rule = line(widths.map((w) => '-'.repeat(w)));
  return [line(cells[0]), rule, ...cells.slice(1).map(line)].join('\n');
}
