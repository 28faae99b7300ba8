// Another process holding a SQLite file's write lock, as a long transaction, a backup or a
// `sqlite3` shell would. Usage: node write-lock-worker.mjs <file> <holdMs>
// Takes the lock with BEGIN IMMEDIATE, prints "locked", keeps it for <holdMs>, commits, prints
// "released" and exits.
import Database from 'better-sqlite3';

const [path, holdMs] = process.argv.slice(2);
const db = new Database(path, { timeout: 10_000 });
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
setTimeout(() => {
  db.exec('COMMIT');
  db.close();
  process.stdout.write('released\n');
}, Number(holdMs));
