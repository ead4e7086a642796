/**
 * The host to give Node's server.listen() for a bind address as MetalLB's flags take it.
 * Go's net.Listen("tcp", "0.0.0.0:7472") (and an empty host, and `::`) listens on every address
 * of the machine, IPv4 and IPv6 alike; Node does that when listen() gets no host. Given a host,
 * even an IP literal, Node resolves it first: it loads node:dns and sets up c-ares, 0.85 MiB
 * resident in every daemon for as long as it runs (issue #14; README, Performance).
 */

/**
 * `undefined` (listen on every address, IPv4 and IPv6) for an empty or unspecified bind address
 * (`''`, `0.0.0.0`, `::`, `[::]`), else `address` itself (an IP literal or a name Node resolves).
 */
export function listenHost(address: string | undefined): string | undefined {
  return address === undefined || address === '' || address === '0.0.0.0' || address === '::' || address === '[::]' ? undefined : address;
}
