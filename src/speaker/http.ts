/**
 * The speaker's HTTP endpoints: `/metrics` (Prometheus text format), `/healthz` (alive) and
 * `/readyz` (200 once the first full sync ran, else 503), `/debug/members` (the memberlist view,
 * JSON; `metallb-ts members` prints it). Plain HTTP: MetalLB serves metrics over
 * HTTPS with its own certificate; put a proxy in front if that matters.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { setDateHeader } from '../runtime/utc-time.ts';
import { listenHost } from '../runtime/listen-host.ts';

/** A listening endpoint server. */
export interface EndpointServer {
  readonly server: Server;
  /** `host:port` actually bound (port 0 picks one) */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Listens on `host:port` and serves the given paths; other paths get 404.
 * @throws the listen error (e.g. EADDRINUSE) as an Error naming the address.
 */
export async function serveEndpoints(host: string, port: number, opts: { registry?: Registry; ready?: () => boolean; members?: () => unknown }): Promise<EndpointServer> {
  const server = createServer((req, res) => {
    setDateHeader(res);
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    } else if (path === '/readyz' && opts.ready) {
      const ok = opts.ready();
      res.writeHead(ok ? 200 : 503, { 'Content-Type': 'text/plain' }).end(ok ? 'ok' : 'not synced yet');
    } else if (path === '/metrics' && opts.registry) {
      const registry = opts.registry;
      registry.metrics().then(
        (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(String(err)),
      );
    } else if (path === '/debug/members' && opts.members) {
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(opts.members()) + '\n');
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`cannot listen on ${host}:${port}: ${err.message}`)));
    server.listen(port, listenHost(host), () => resolve());
  });
  const a = server.address() as AddressInfo;
  return {
    server,
    address: `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
