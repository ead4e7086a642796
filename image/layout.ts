/**
 * The image's layout: where things are and how it starts. One source for the builder
 * (image/build.ts) and for the test that holds the Dockerfile to the same layout
 * (test/unit/image-dockerfile.test.ts): change both together.
 */

/** The project inside the image (the Dockerfile's WORKDIR). */
export const APP_DIR = '/opt/metallb-ts';

/** Node 24, where node:24-slim (the Dockerfile's base) has it; found through PATH by bin/metallb-ts. */
export const NODE_PATH = '/usr/local/bin/node';

/**
 * What the project contributes, relative to APP_DIR, with where it comes from in the repository
 * (the Dockerfile's COPY lines, in the same terms). `node_modules` is the production install
 * (`npm ci --omit=dev`), not the repository's; `native/build/l2.node` is the raw-socket addon;
 * `.compile-cache` is Node's compile cache of src/ built with the image (image/compile-cache.ts);
 * `dist/speaker.cjs`, `dist/controller.cjs` and their starters `dist/metallb-ts-speaker.cjs`,
 * `dist/metallb-ts-controller.cjs` are the daemons' bundles (scripts/bundle.ts: DAEMON_DIST_FILES),
 * built by the image's build from the src/ it ships: what the speaker and the controller run
 * (about 8 MiB less resident than src/cli.ts; issue #14). The other commands run
 * src/cli.ts (the full bundle, dist/cli.cjs, is not shipped).
 */
export const APP_PATHS = [
  'package.json',
  'package-lock.json',
  'node_modules',
  'native/build/l2.node',
  'bin',
  'src',
  'dist/speaker.cjs',
  'dist/metallb-ts-speaker.cjs',
  'dist/controller.cjs',
  'dist/metallb-ts-controller.cjs',
  '.compile-cache',
] as const;

/** The image's configuration (the Dockerfile's ENTRYPOINT, CMD, ENV; no USER: root, see below). */
export const ENTRYPOINT = [`${APP_DIR}/bin/metallb-ts`];
export const CMD = ['--help'];
export const ENV: Record<string, string> = {
  // node:24-slim's PATH (Debian's default); bin/metallb-ts finds Node in it.
  PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
  NODE_ENV: 'production',
  // The compile cache built with the image (image/compile-cache.ts), read-only: no Pod strips the
  // TypeScript types again at start; portable: its keys are paths relative to it (built elsewhere).
  NODE_COMPILE_CACHE: `${APP_DIR}/.compile-cache`,
  NODE_COMPILE_CACHE_PORTABLE: '1',
  // bin/metallb-ts runs the daemons' bundles without comparing them with src/ (the image has no find;
  // its dist/ was built from its src/). A bundle's starter finds NODE_COMPILE_CACHE read-only:
  // no V8 code cache of the bundle, nothing printed.
  METALLB_TS_BUNDLE: '1',
};
/**
 * The default user: root, as the Dockerfile has it (no USER). The speaker needs root with only
 * NET_RAW (deploy/speaker.yaml drops every other capability); a non-root process would not get
 * the added capability in its effective set. deploy/controller.yaml runs the controller as
 * nobody (runAsUser 65534), which /etc/passwd of the image names.
 */
export const USER = '';

/** /tmp must be writable by nobody (the webhook's certificates, --cert-dir) when no emptyDir is mounted there. */
export const TMP_MODE = 0o1777;

/** The name `ctr images import` tags the image with: what deploy/'s `image: metallb-ts:0.1.0` means. */
export function imageName(version: string): string {
  return `docker.io/library/metallb-ts:${version}`;
}
