// One OS process writing through a SqliteFence under one token until its write is rejected.
// Usage: node fence-worker.mjs <dbPath> <token> <maxWrites>
// Each accepted write appends its token to the `log` table. Prints one JSON line at the end.
import Database from 'better-sqlite3';
import { SqliteFence } from '../../dist/fence/index.js';

const [dbPath, token, maxWrites] = process.argv.slice(2);
const db = new Database(dbPath, { timeout: 10_000 });
const fence = new SqliteFence(db);
const log = db.prepare('INSERT INTO log (token) VALUES (?)');
let accepted = 0;
let rejected = 0;
for (let i = 0; i < Number(maxWrites) && rejected === 0; i++) {
  const result = await fence.write('ledger', Number(token), () => log.run(Number(token)));
  if (result.accepted) accepted++;
  else rejected++;
}
db.close();
process.stdout.write(`${JSON.stringify({ token: Number(token), accepted, rejected })}\n`);
