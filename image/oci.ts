/**
 * OCI image layout, written as one tar archive (what `ctr images import`, `docker load` (25+),
 * skopeo's `oci-archive:` and podman read): `oci-layout`, `index.json` and `blobs/sha256/…` — the
 * gzip-compressed layers, the image configuration and the manifest. Deterministic: the same
 * entries and configuration give the same bytes, so the same manifest digest.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createGzip } from 'node:zlib';
import { tarStream, type TarEntry } from './tar.ts';

export const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
}

/** A written layer blob. */
export interface Layer {
  name: string;
  /** sha256 of the compressed blob (the manifest's). */
  digest: string;
  size: number;
  /** sha256 of the uncompressed tar (the config's rootfs.diff_ids). */
  diffId: string;
  uncompressedSize: number;
  entries: number;
  /** The blob file on disk. */
  path: string;
  /** Whether the compressed blob came from the cache. */
  cached: boolean;
}

/** Every parent directory of the entries' paths that is not an entry itself, as 0755 directories. */
export function withParents(entries: readonly TarEntry[]): TarEntry[] {
  const have = new Set(entries.map((e) => e.path.replace(/\/$/, '')));
  const out = [...entries];
  for (const e of entries) {
    const parts = e.path.replace(/\/$/, '').split('/');
    for (let i = 1; i < parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      if (!have.has(p)) {
        have.add(p);
        out.push({ type: 'dir', path: p, mode: 0o755 });
      }
    }
  }
  return out;
}

/** Entries sorted by path, parents first; a path given twice is an error (two sources for one file). */
export function sortEntries(entries: readonly TarEntry[]): TarEntry[] {
  const byPath = new Map<string, TarEntry>();
  for (const e of entries) {
    const p = e.path.replace(/\/$/, '');
    const prev = byPath.get(p);
    if (prev && JSON.stringify(strip(prev)) !== JSON.stringify(strip(e))) throw new Error(`two different entries for /${p}`);
    byPath.set(p, e);
  }
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
const strip = (e: TarEntry): unknown => (e.type === 'file' ? { ...e, source: 'file' in e.source ? e.source.file : e.source.bytes.toString('base64') } : e);

/**
 * Writes one layer: the tar of `entries` (sorted, parents added) is hashed (diff_id); its gzip is
 * taken from `blobDir` when `reuse` is on and a blob for that diff_id and level is there, else
 * compressed into it. Returns the layer with the blob's path.
 */
export async function writeLayer(name: string, entries: readonly TarEntry[], opts: { mtime: number; gzipLevel: number; blobDir: string; reuse: boolean }): Promise<Layer> {
  const all = sortEntries(withParents(entries));
  const diff = createHash('sha256');
  let uncompressedSize = 0;
  for await (const chunk of tarStream(all, opts.mtime)) {
    diff.update(chunk);
    uncompressedSize += chunk.length;
  }
  const diffId = `sha256:${diff.digest('hex')}`;
  mkdirSync(opts.blobDir, { recursive: true });
  const cached = join(opts.blobDir, `layer-${diffId.slice(7)}-gzip${opts.gzipLevel}.tar.gz`);
  const digestFile = `${cached}.sha256`;
  if (opts.reuse && existsSync(cached) && existsSync(digestFile)) {
    const digest = readFileSync(digestFile, 'utf8').trim();
    return { name, digest, size: statSync(cached).size, diffId, uncompressedSize, entries: all.length, path: cached, cached: true };
  }
  // Compress: the tar again (same bytes: same entries, same files) through gzip into a temp file.
  const tmp = `${cached}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  const blobHash = createHash('sha256');
  let size = 0;
  const check = createHash('sha256');
  try {
    const gz = createGzip({ level: opts.gzipLevel, memLevel: 9, chunkSize: 1 << 20 });
    const done = new Promise<void>((resolve, reject) => {
      gz.on('data', (c: Buffer) => {
        blobHash.update(c);
        size += c.length;
        writeSync(fd, c);
      });
      gz.on('end', resolve);
      gz.on('error', reject);
    });
    for await (const chunk of tarStream(all, opts.mtime)) {
      check.update(chunk);
      if (!gz.write(chunk)) await new Promise((r) => gz.once('drain', r));
    }
    gz.end();
    await done;
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (`sha256:${check.digest('hex')}` !== diffId) {
    rmSync(tmp, { force: true });
    throw new Error(`layer ${name}: a file changed while the layer was written; build again`);
  }
  const digest = `sha256:${blobHash.digest('hex')}`;
  renameSync(tmp, cached);
  writeFileSync(digestFile, `${digest}\n`);
  return { name, digest, size, diffId, uncompressedSize, entries: all.length, path: cached, cached: false };
}

/** Canonical JSON bytes (keys in the order written, no spaces) and their descriptor. */
export function jsonBlob(mediaType: string, value: unknown): { bytes: Buffer; descriptor: Descriptor } {
  const bytes = Buffer.from(JSON.stringify(value), 'utf8');
  return { bytes, descriptor: { mediaType, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`, size: bytes.length } };
}

export interface ImageConfig {
  architecture: string;
  os: 'linux';
  created?: string;
  config: {
    User?: string;
    Env: string[];
    Entrypoint: string[];
    Cmd: string[];
    WorkingDir: string;
    Labels: Record<string, string>;
  };
  history: { created?: string; created_by: string; comment?: string }[];
}

export interface WrittenImage {
  archive: string;
  manifestDigest: string;
  configDigest: string;
  archiveSize: number;
}

/**
 * Writes the OCI archive `out` (atomically: a temp file renamed) for `layers` and `config`, the
 * manifest tagged `name` in index.json (`io.containerd.image.name`, which ctr and docker load
 * use, and `org.opencontainers.image.ref.name`, the tag, for OCI tools).
 */
export async function writeArchive(out: string, name: string, layers: readonly Layer[], config: ImageConfig, mtime: number): Promise<WrittenImage> {
  const cfg = jsonBlob(MEDIA.config, { ...config, rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) } });
  const manifest = jsonBlob(MEDIA.manifest, {
    schemaVersion: 2,
    mediaType: MEDIA.manifest,
    config: cfg.descriptor,
    layers: layers.map((l): Descriptor => ({ mediaType: MEDIA.layer, digest: l.digest, size: l.size })),
  });
  const tag = name.slice(name.lastIndexOf(':') + 1);
  const index = jsonBlob(MEDIA.index, {
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: [
      {
        ...manifest.descriptor,
        platform: { architecture: config.architecture, os: config.os },
        annotations: { 'io.containerd.image.name': name, 'org.opencontainers.image.ref.name': tag },
      },
    ],
  });
  const file = (path: string, bytes: Buffer): TarEntry => ({ type: 'file', path, mode: 0o644, size: bytes.length, source: { bytes } });
  const entries: TarEntry[] = [
    { type: 'dir', path: 'blobs', mode: 0o755 },
    { type: 'dir', path: 'blobs/sha256', mode: 0o755 },
    file(`blobs/sha256/${cfg.descriptor.digest.slice(7)}`, cfg.bytes),
    file(`blobs/sha256/${manifest.descriptor.digest.slice(7)}`, manifest.bytes),
    ...layers.map((l): TarEntry => ({ type: 'file', path: `blobs/sha256/${l.digest.slice(7)}`, mode: 0o644, size: l.size, source: { file: l.path } })),
    file('index.json', index.bytes),
    file('oci-layout', Buffer.from(JSON.stringify({ imageLayoutVersion: '1.0.0' }))),
  ];
  mkdirSync(dirname(out), { recursive: true });
  const tmp = `${out}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  let archiveSize = 0;
  try {
    for await (const chunk of tarStream(sortEntries(entries), mtime)) {
      writeSync(fd, chunk);
      archiveSize += chunk.length;
    }
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, out);
  return { archive: out, manifestDigest: manifest.descriptor.digest, configDigest: cfg.descriptor.digest, archiveSize };
}
