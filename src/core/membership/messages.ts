/**
 * memberlist v0.5.1's wire format, one module per seam (as memberlist's net.go, util.go and
 * security.go split it): message.ts (message bodies, push/pull, limits), layers.ts (compound, CRC,
 * compress, label), packet.ts (UDP packets), stream.ts (TCP stream framing). Importers take
 * everything from here. Pure: bytes in, values out; no sockets.
 */
export * from './message.ts';
export * from './layers.ts';
export * from './packet.ts';
export * from './stream.ts';
