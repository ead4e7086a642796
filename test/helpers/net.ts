import { createServer } from 'node:net';

/**
 * A free TCP port on 127.0.0.1: bound, read and released. A small race remains (another process may
 * take it before the caller binds); tests that need a port nobody listens on use it as is.
 */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.unref();
    s.on('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      if (addr === null || typeof addr === 'string') {
        s.close();
        rej(new Error('no port'));
        return;
      }
      const port = addr.port;
      s.close(() => res(port));
    });
  });
}
