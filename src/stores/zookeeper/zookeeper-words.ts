import { connect } from 'node:net';
import { noAnswer } from '../../core/deadline.js';

/** What a ZooKeeper server answers a four-letter word. */
export type WordAnswer =
  | { readonly kind: 'text'; readonly text: string }
  /** The word is not in the server's `4lw.commands.whitelist`. */
  | { readonly kind: 'refused' }
  /** The server runs but serves no one (an ensemble member without a quorum). */
  | { readonly kind: 'not-serving' };

/** More than any answer of `srvr`, `conf` or `mntr` (a few KB): a bound on what is kept. */
const MAX_ANSWER_BYTES = 1 << 20;

/**
 * Sends a four-letter word (`srvr`, `conf`, `mntr`) to `host` (`name:port`) on a connection of its
 * own and reads the answer to the server's close, within `timeoutMs`: a paused server gives
 * `STORE_UNAVAILABLE`, never a hang. A refused connection rejects with the socket's error.
 */
export function fourLetterWord(host: string, word: string, timeoutMs: number): Promise<WordAnswer> {
  const colon = host.lastIndexOf(':');
  const socket = connect({ host: host.slice(0, colon), port: Number(host.slice(colon + 1)) });
  return new Promise<WordAnswer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(noAnswer(`zookeeper ${word} on ${host}`, timeoutMs));
    }, timeoutMs);
    socket.on('connect', () => socket.write(word));
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes <= MAX_ANSWER_BYTES) chunks.push(chunk);
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('close', (hadError) => {
      clearTimeout(timer);
      if (!hadError) resolve(readAnswer(Buffer.concat(chunks).toString('utf8')));
    });
  });
}

function readAnswer(text: string): WordAnswer {
  if (/is not executed because it is not in the whitelist/.test(text)) return { kind: 'refused' };
  if (/not currently serving requests/.test(text)) return { kind: 'not-serving' };
  return { kind: 'text', text };
}
