// Another process holding a SQLite file's write lock, as a long transaction, a backup or a
// `sqlite3` shell would. Usage: node write-lock-worker.mjs <file>
// Takes the lock with BEGIN IMMEDIATE, prints "locked", keeps it until a line (or the end) comes on
// its stdin, commits, prints "released" and exits.
import Database from 'better-sqlite3';

const [path] = process.argv.slice(2);
const db = new Database(path, { timeout: 10_000 });
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
let done = false;
const release = () => {
  if (done) return;
  done = true;
  db.exec('COMMIT');
  db.close();
  process.stdout.write('released\n');
  process.stdin.destroy();
};
process.stdin.on('data', release);
process.stdin.on('end', release);
