import { Socket } from 'node:net';

/**
 * A socket that sends everything written to it in one turn of the event loop as one write. node-postgres writes each
 * protocol message on its own, so a pipelined transaction (BEGIN, a parameterized statement's parse, bind, describe,
 * execute and sync, COMMIT) left as two or three system calls, each of which on loopback also wakes Postgres. Gathered
 * until the turn's promise callbacks have run (`setImmediate`), they leave as one.
 */
export function corkingSocket(): Socket {
  const socket = new Socket();
  // `connect()` puts Socket.prototype.write back on the instance, so the wrapper goes on once connected (before
  // node-postgres writes its start-up message, which waits for this event too).
  socket.prependOnceListener('connect', () => {
    const write = socket.write;
    let corked = false;
    const flush = () => {
      corked = false;
      socket.uncork();
    };
    socket.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
      if (!corked) {
        corked = true;
        socket.cork();
        setImmediate(flush);
      }
      return write.apply(this, args);
    } as Socket['write'];
  });
  return socket;
}
