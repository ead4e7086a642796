/**
 * The snapshot ClusterState source: Kubernetes objects read from files (`-f FILE|DIR`, repeatable,
 * `-f -` for stdin), as `kubectl get ... -o yaml|json` prints them or as plain manifests.
 *
 * Accepted shapes, in YAML or JSON: a single object; several YAML documents (`---`); a `kind: List`
 * or any `*List` kind (`ServiceList`, as the raw API returns it, whose items may lack `kind`).
 * Noise (`managedFields`, `resourceVersion`, `status`, ...) passes through untouched. A directory
 * contributes its `*.yaml`, `*.yml` and `*.json` files, sorted by name, not recursively (kubectl's
 * default); other files are ignored. Kinds not in KIND_TO_LIST are dropped.
 *
 * Every kept object is checked against its kind's shape (src/core/shape.ts) as it is read, so a
 * malformed field is reported here as `file:line: Kind ns/name: field: expected …` (exit 2) rather
 * than crashing the core. Objects of the same kind, namespace and name (the same file given twice,
 * overlapping dumps) are collapsed to the last one read, as `kubectl apply` would leave them.
 */
import type { Stats } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import { clusterStateFromObjects, originOf, setOrigin, KIND_TO_LIST, type ClusterState, type KubeObject } from '../core/kube.ts';
import { InputError, UserError } from '../core/errors.ts';
import { checkShape } from '../core/shape.ts';
import { parseKubectlYaml } from './kubectl-yaml.ts';

// The parsers are loaded on first use: a JSON snapshot needs neither, a YAML one only js-yaml
// unless it has anchors or errors (about 60 ms of CPU at start for both).
const require = createRequire(import.meta.url);
const yaml = (): typeof import('yaml') => require('yaml') as typeof import('yaml');
const jsYaml = (): typeof import('js-yaml') => require('js-yaml') as typeof import('js-yaml');

/** The name stdin goes by in messages and origins. */
export const STDIN_NAME = '<stdin>';

/** Options of loadSnapshot. */
export interface LoadSnapshotOptions {
  /** What `-f -` reads: a stream (default `process.stdin`) or the text itself (tests). */
  stdin?: NodeJS.ReadableStream | string;
  /**
   * Receives each warning (one line, no prefix): objects defined more than once with different
   * contents. Default: the handler set with setSnapshotWarningHandler (the CLI prints to stderr).
   */
  onWarning?: (message: string) => void;
}

let defaultWarningHandler: (message: string) => void = () => {};

/**
 * Sets where loadSnapshot's warnings go when its caller passes no `onWarning` (the CLI sets a
 * handler that prints them on stderr). Returns the previous handler.
 */
export function setSnapshotWarningHandler(handler: (message: string) => void): (message: string) => void {
  const previous = defaultWarningHandler;
  defaultWarningHandler = handler;
  return previous;
}

/** Deepest nesting accepted in a document: the API server's JSON decoder limit. */
export const MAX_DEPTH = 10_000;

/**
 * Reads every path (file, directory, or `-` for stdin) in order and builds one ClusterState.
 * Every kept object gets its origin (file and 1-based line of its document or List item) recorded
 * with `setOrigin`.
 *
 * @throws InputError naming the file (and line, when there is one) for: a missing or unreadable
 *   file, broken YAML/JSON (the parser's line), a document or List item that is not an object or
 *   has no `kind`, a directory without any `*.yaml|*.yml|*.json` file, a kept object with a field of
 *   the wrong type or without `metadata.name` (checkShape), YAML alias bombs and documents nested
 *   too deeply.
 * @throws UserError when no path is given, `-` is given twice, or no object at all was found
 *   across all inputs.
 *
 * Objects of a kept kind with the same kind, namespace and name: the last one read is kept (in its
 * place); when the copies differ, one warning names every file:line (`opts.onWarning`).
 */
export async function loadSnapshot(paths: readonly string[], opts: LoadSnapshotOptions = {}): Promise<ClusterState> {
  if (paths.length === 0) throw new UserError('no snapshot file given (use -f FILE|DIR, or -f - for stdin)');
  const objects: KubeObject[] = [];
  let stdinText: string | undefined;
  for (const path of paths) {
    if (path === '-') {
      if (stdinText !== undefined) throw new UserError('-f - (stdin) given more than once');
      stdinText = await readStdin(opts.stdin ?? process.stdin);
      objects.push(...parseSnapshotText(stdinText, STDIN_NAME));
      continue;
    }
    for (const file of await expandPath(path)) {
      objects.push(...parseSnapshotText(await readText(file), file));
    }
  }
  if (objects.length === 0) {
    throw new UserError(`empty snapshot: no Kubernetes objects found in ${paths.map((p) => (p === '-' ? STDIN_NAME : p)).join(', ')}`);
  }
  return clusterStateFromObjects(withoutDuplicates(objects, opts.onWarning ?? defaultWarningHandler));
}

/**
 * Drops objects of kinds not kept, and keeps the last of the objects sharing kind, namespace and
 * name (the API server holds one; `kubectl apply` of both leaves the last), in its position.
 * Warns once per name when the copies are not deep-equal.
 */
function withoutDuplicates(all: readonly KubeObject[], warn: (message: string) => void): KubeObject[] {
  // Only own keys: a `kind: toString` must not reach clusterStateFromObjects' KIND_TO_LIST lookup.
  const objects = all.filter((o) => Object.hasOwn(KIND_TO_LIST, o.kind!));
  const byKey = new Map<string, number[]>();
  objects.forEach((o, i) => {
    const ns = clusterScoped(o.kind!) ? '' : (o.metadata?.namespace ?? 'default');
    const name = o.metadata?.name;
    // kind (a KIND_TO_LIST key), namespace (length-prefixed) and name; JSON (`[…`) for anything else
    const key = typeof ns === 'string' && typeof name === 'string' ? `${o.kind}\0${ns.length}:${ns}${name}` : JSON.stringify([o.kind, ns, name]);
    const at = byKey.get(key);
    if (at) at.push(i);
    else byKey.set(key, [i]);
  });
  const drop = new Set<number>();
  for (const at of byKey.values()) {
    if (at.length < 2) continue;
    const last = objects[at.at(-1)!]!;
    at.slice(0, -1).forEach((i) => {
      drop.add(i);
    });
    // node:util only when an object is repeated (about 3 ms to load on every start otherwise).
    const { isDeepStrictEqual } = process.getBuiltinModule('node:util');
    if (at.slice(0, -1).every((i) => isDeepStrictEqual(objects[i], last))) continue;
    const places = at.map((i) => {
      const o = originOf(objects[i]!);
      return o ? `${o.file}:${o.line}` : '?';
    });
    warn(`${describe(last)} is defined ${at.length === 2 ? 'twice' : `${at.length} times`} in the input, with different contents (${places.join(', ')}); using the last one, as kubectl apply would`);
  }
  return drop.size === 0 ? objects : objects.filter((_, i) => !drop.has(i));
}

const clusterScoped = (kind: string): boolean => kind === 'Node' || kind === 'Namespace';

/** `Kind ns/name` (`Kind name` for cluster-scoped kinds or without namespace; `<unnamed>` without name). */
function describe(o: KubeObject): string {
  const meta: unknown = o.metadata;
  const m = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>) : {};
  const name = typeof m['name'] === 'string' && m['name'] !== '' ? m['name'] : '<unnamed>';
  const ns = typeof m['namespace'] === 'string' && m['namespace'] !== '' && !clusterScoped(o.kind!) ? `${m['namespace']}/` : '';
  return `${o.kind} ${ns}${name}`;
}

/**
 * Parses one file's text (YAML, multi-document YAML or JSON) into its objects, Lists flattened,
 * in document order. Every object of any kind is returned (filtering is clusterStateFromObjects'
 * job) and gets its origin recorded. Empty documents (only comments or `---`) are skipped.
 *
 * @throws InputError `file:line: ...` for a YAML/JSON syntax error, a document or List item that is
 *   not an object, or one without `kind`.
 */
export function parseSnapshotText(text: string, file: string): KubeObject[] {
  const fast = parseJSONSnapshot(text, file) ?? parseKubectlYAMLSnapshot(text, file) ?? parseYAMLFast(text, file);
  if (fast) return fast;
  const { LineCounter, parseAllDocuments, isMap, isSeq } = yaml();
  const lineCounter = new LineCounter();
  let docs: readonly Document.Parsed[]; // an empty stream is an empty array
  try {
    docs = parseAllDocuments(text, { lineCounter, prettyErrors: false });
  } catch (err) {
    throw yamlThrown(err, file, 1);
  }
  const lineOf = (node: YamlNode | null | undefined, fallback: number): number => (node?.range ? lineCounter.linePos(node.range[0]).line : fallback);

  const out: KubeObject[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw yamlError(doc.errors[0]!, file, lineCounter);
    if (doc.contents === null) continue; // empty document
    const docLine = lineOf(doc.contents, lineCounter.linePos(doc.range[0]).line);
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 1000 });
    } catch (err) {
      throw yamlThrown(err, file, docLine);
    }
    const itemsNode = isMap(doc.contents) ? doc.contents.get('items', true) : undefined;
    const itemNodes = isSeq(itemsNode) ? itemsNode.items : [];
    out.push(...objectsOf(value, docLine, file, (_item, i) => lineOf(itemNodes[i] as YamlNode | undefined, docLine)));
  }
  return out;
}

/**
 * The objects of one parsed document (`value`, starting at `docLine`): the document itself, or the
 * items of a List (`itemLine` gives each item's line), each checked and recorded with its origin.
 * `null` documents and Lists without items give none.
 */
function objectsOf(value: unknown, docLine: number, file: string, itemLine: (item: unknown, i: number) => number): KubeObject[] {
  if (value === null || value === undefined) return []; // `---` followed by nothing, or `null`
  const obj = asObject(value, file, docLine, 'document');
  if (!isListKind(obj)) return [record(obj, file, docLine)];
  const items = obj['items'];
  if (items === null || items === undefined) return [];
  if (!Array.isArray(items)) throw new InputError(file, `${obj.kind}: "items" is not a list`, docLine);
  const itemKind = obj.kind !== 'List' ? obj.kind!.slice(0, -'List'.length) : undefined;
  return items.map((item: unknown, i: number) => {
    const line = itemLine(item, i);
    fillItemKind(item, itemKind, obj);
    return record(asObject(item, file, line, `${obj.kind} item ${i}`), file, line);
  });
}

/**
 * Fastest path for YAML: the shape `kubectl get -o yaml` and `metallb-ts snapshot` write, read by
 * parseKubectlYaml (the same values as js-yaml, which is then not even loaded). Returns undefined
 * when the text uses anything else, or when an object is not acceptable (the slower paths report
 * that with its exact line). Origins: the line where each document and each List item starts.
 */
function parseKubectlYAMLSnapshot(text: string, file: string): KubeObject[] | undefined {
  const docs = parseKubectlYaml(text);
  if (!docs) return undefined;
  const out: KubeObject[] = [];
  try {
    for (const doc of docs) out.push(...objectsOf(doc.value, doc.line, file, (_item, i) => doc.itemLines[i] ?? doc.line));
  } catch (err) {
    if (err instanceof InputError) return undefined;
    throw err;
  }
  return out;
}

/**
 * Fast path for large YAML dumps: js-yaml (YAML 1.2 core schema, the `yaml` package's default)
 * parses `kubectl get -o yaml` output about six times faster than the `yaml` package, whose
 * document model the error path keeps for its precise messages. Used only for text without
 * anchors (so no alias can blow up later traversals); on any error it returns undefined and the
 * `yaml` path reports the problem with its line. Origins: the line where each document and each
 * List item starts, from js-yaml's node events.
 */
function parseYAMLFast(text: string, file: string): KubeObject[] | undefined {
  if (/(^|[\s[{,])&\S/.test(text)) return undefined;
  const lines = new WeakMap<object, number>();
  // Only documents (depth 0) and the elements of their sequences (depth 2: List items) need a
  // line: the listener runs for every node (keys and scalars too), so it keeps nothing else.
  let depth = 0;
  let docLine = 0;
  let itemLine = 0;
  const docs: unknown[] = [];
  try {
    const jsyaml = jsYaml();
    jsyaml.loadAll(text, (doc) => docs.push(doc), {
      schema: jsyaml.CORE_SCHEMA,
      filename: file,
      listener(event, state) {
        if (event === 'open') {
          if (depth === 0) docLine = state.line;
          else if (depth === 2) itemLine = state.line;
          depth++;
        } else if (--depth === 0 || depth === 2) {
          if (state.result !== null && typeof state.result === 'object') lines.set(state.result, (depth === 0 ? docLine : itemLine) + 1);
        }
      },
    });
  } catch {
    return undefined;
  }
  const out: KubeObject[] = [];
  try {
    for (const doc of docs) {
      const docLine = doc !== null && typeof doc === 'object' ? (lines.get(doc) ?? 1) : 1;
      out.push(...objectsOf(doc, docLine, file, (item) => (item !== null && typeof item === 'object' ? (lines.get(item) ?? docLine) : docLine)));
    }
  } catch (err) {
    // Lines are only known for objects here: let the `yaml` path report the problem exactly.
    if (err instanceof InputError) return undefined;
    throw err;
  }
  return out;
}

/**
 * Fast path for a JSON object (`kubectl get -o json`): JSON.parse is an order of magnitude faster
 * than a YAML parser on large dumps. Returns undefined when the text is not one valid JSON object,
 * so the YAML parser (a superset) handles it and reports errors with their line. Origins: the line
 * of the object or of each List item, from one scan of the text.
 */
function parseJSONSnapshot(text: string, file: string): KubeObject[] | undefined {
  const start = text.search(/\S/);
  if (start < 0 || text[start] !== '{') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch {
    return undefined;
  }
  const lines = jsonItemLines(text);
  if (lines.tooDeep !== undefined) throw new InputError(file, `document nested too deeply (more than ${MAX_DEPTH} levels)`, lines.tooDeep);
  return objectsOf(value, lines.top, file, (_item, i) => lines.items[i] ?? lines.top);
}

/**
 * Lines (1-based) of the top-level object and of the elements of its `items` array, found by one
 * pass over valid JSON text (only objects and arrays are counted as elements); `tooDeep` is the
 * line where nesting first exceeds MAX_DEPTH.
 */
function jsonItemLines(text: string): { top: number; items: number[]; tooDeep?: number } {
  const items: number[] = [];
  let line = 1;
  let top = 0;
  let depth = 0;
  let lastKey = '';
  // Depth at which an element of the array we record opens; -1 while unknown, -2 once done.
  let itemsDepth = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) line++;
    else if (c === 0x22) {
      // A string (valid JSON: no raw newline in it): jump to its closing quote, one not escaped
      // by an odd run of backslashes; indexOf skips most of the text (string contents).
      const start = i;
      let end = text.indexOf('"', i + 1);
      for (;;) {
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (depth === 1) lastKey = text.slice(start + 1, end);
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0) top = line;
      else if (depth === itemsDepth) items.push(line);
      else if (depth === 1 && c === 0x5b && itemsDepth === -1 && lastKey === 'items') itemsDepth = 2;
      if (++depth > MAX_DEPTH) return { top: top || 1, items, tooDeep: line };
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth === 1 && itemsDepth === 2 && c === 0x5d) itemsDepth = -2;
    }
  }
  return { top: top || 1, items };
}

function fillItemKind(item: unknown, itemKind: string | undefined, list: KubeObject): void {
  if (item !== null && typeof item === 'object' && !Array.isArray(item) && itemKind) {
    // The raw API (`kubectl get --raw`, a `ServiceList`) leaves kind/apiVersion off the items.
    const it = item as KubeObject;
    if (it.kind === undefined) it.kind = itemKind;
    if (it.apiVersion === undefined && typeof list.apiVersion === 'string') it.apiVersion = list.apiVersion;
  }
}

/**
 * Renders a ClusterState as one `kind: List` (apiVersion v1), as `kubectl get -o yaml|json` would:
 * objects grouped by kind in KIND_TO_LIST order, each kind in its read order. `metadata.managedFields`
 * is left out (kubectl hides it by default too); everything else is written as loaded.
 * Returns the text, ending with a newline.
 */
export function dumpSnapshot(state: ClusterState, format: 'yaml' | 'json'): string {
  const items: KubeObject[] = [];
  for (const list of Object.values(KIND_TO_LIST)) {
    for (const obj of state[list] as KubeObject[]) items.push(withoutManagedFields(obj));
  }
  const doc = { apiVersion: 'v1', kind: 'List', metadata: { resourceVersion: '' }, items };
  return format === 'json' ? JSON.stringify(doc, null, 4) + '\n' : yaml().stringify(doc, { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false, indentSeq: false });
}

function withoutManagedFields(obj: KubeObject): KubeObject {
  if (obj.metadata === null || typeof obj.metadata !== 'object' || !('managedFields' in obj.metadata)) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

function isListKind(obj: KubeObject): boolean {
  return typeof obj.kind === 'string' && obj.kind.endsWith('List') && ('items' in obj || obj.kind === 'List');
}

function asObject(value: unknown, file: string, line: number, what: string): KubeObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const got = Array.isArray(value) ? 'a list' : value === null ? 'null' : `a ${typeof value}`;
    throw new InputError(file, `${what} is ${got}, not a Kubernetes object`, line);
  }
  const obj = value as KubeObject;
  if (typeof obj.kind !== 'string' || obj.kind === '') {
    throw new InputError(file, `${what} has no "kind"; is this a Kubernetes manifest?`, line);
  }
  return obj;
}

function record(obj: KubeObject, file: string, line: number): KubeObject {
  const problems = checkShape(obj);
  if (problems.length > 0) throw new InputError(file, `${describe(obj)}: ${problems[0]}`, line);
  setOrigin(obj, { file, line });
  return obj;
}

function yamlError(err: { message: string; pos: [number, number] }, file: string, lc: LineCounter): InputError {
  const line = lc.linePos(err.pos[0]).line;
  // The parser's message may carry a code excerpt on further lines; keep the first one.
  const message = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  if (/Maximum call stack/i.test(message)) return new InputError(file, 'invalid YAML: document nested too deeply', line);
  return new InputError(file, `invalid YAML/JSON: ${message}`, line);
}

/** An error the `yaml` library threw (not reported in `doc.errors`): an alias bomb, a stack overflow. */
function yamlThrown(err: unknown, file: string, line: number): InputError {
  const message = err instanceof Error ? err.message : String(err);
  if (/Excessive alias count/.test(message)) return new InputError(file, 'invalid YAML: too many aliases (resource exhaustion)', line);
  if (/Maximum call stack/i.test(message)) return new InputError(file, 'invalid YAML: document nested too deeply', line);
  return new InputError(file, `invalid YAML: ${message.split('\n')[0]}`, line);
}

/** The files a `-f` path stands for: itself, or a directory's `*.yaml|*.yml|*.json` files, sorted. */
async function expandPath(path: string): Promise<string[]> {
  let info: Stats;
  try {
    info = await stat(path);
  } catch (err) {
    throw fsError(err, path);
  }
  if (!info.isDirectory()) return [path];
  let names: string[];
  try {
    names = await readdir(path);
  } catch (err) {
    throw fsError(err, path);
  }
  const files = names
    .filter((n) => /\.(ya?ml|json)$/i.test(n))
    .sort()
    .map((n) => join(path, n));
  const regular: string[] = [];
  for (const f of files) {
    if ((await stat(f).catch(() => undefined))?.isFile()) regular.push(f);
  }
  if (regular.length === 0) throw new InputError(path, 'directory has no *.yaml, *.yml or *.json file');
  return regular;
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw fsError(err, file);
  }
}

function fsError(err: unknown, path: string): InputError {
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return new InputError(path, 'no such file or directory');
    case 'EACCES':
    case 'EPERM':
      return new InputError(path, 'permission denied');
    case 'EISDIR':
      return new InputError(path, 'is a directory');
    default:
      return new InputError(path, `cannot read: ${(err as Error).message}`);
  }
}

async function readStdin(stdin: NodeJS.ReadableStream | string): Promise<string> {
  if (typeof stdin === 'string') return stdin;
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}
