import type mysql from 'mysql2/promise';

const COMMANDS: Record<number, string> = { 0x03: 'Query', 0x16: 'Prepare', 0x17: 'Execute' };

/**
 * Records every command the driver puts on the wire for `pool` (a query, a prepare, an execute, a
 * ping), by its command byte, from connections opened after this call: each one is a request and
 * its answer, one round trip. A cached prepared statement sends nothing.
 */
export function recordCommands(pool: mysql.Pool): string[] {
  const sent: string[] = [];
  pool.pool.on('connection', (connection) => {
    const core = connection as unknown as { writePacket(packet: { buffer: Buffer }): unknown };
    const write = core.writePacket.bind(core);
    core.writePacket = (packet) => {
      // After the handshake, the first byte of a client packet names its command.
      const command = packet.buffer[4]!;
      sent.push(COMMANDS[command] ?? `command 0x${command.toString(16)}`);
      return write(packet);
    };
  });
  return sent;
}

/** The server's global status counters of statements by kind (`SHOW GLOBAL STATUS`). */
export async function statementCounters(admin: mysql.Pool): Promise<Record<string, number>> {
  const [rows] = await admin.query(`SHOW GLOBAL STATUS WHERE Variable_name IN
    ('Questions', 'Com_stmt_execute', 'Com_insert', 'Com_update', 'Com_select', 'Com_commit')`);
  return Object.fromEntries(
    (rows as { Variable_name: string; Value: string }[]).map((r) => [
      r.Variable_name,
      Number(r.Value),
    ]),
  );
}
