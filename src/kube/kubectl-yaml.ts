/**
 * A parser for the YAML that `kubectl get -o yaml` and `metallb-ts snapshot` write, and nothing
 * more: block mappings and sequences (sequences indented or not under their key), plain scalars,
 * single- and double-quoted scalars on one line, `{}` and `[]`, literal block scalars (`|`, `|-`),
 * full-line comments and `---` between documents. It gives the same values as js-yaml's
 * CORE_SCHEMA `loadAll` (the snapshot reader's general path), about ten times faster on a large dump,
 * and gives up (returns undefined) on anything else so that the general path reads it: anchors
 * (any `&` after a space), aliases, tags, flow collections with content, folded or `|+` scalars,
 * multi-line plain or quoted scalars, end-of-line comments, tabs, CR line ends, a BOM, directives,
 * duplicate or non-string keys, `<<` and `__proto__` keys, and anything js-yaml would reject.
 */

/** One parsed document: its value, the (1-based) line its content starts on, and the line of each element of its `items` sequence. */
export interface FastDocument {
  readonly value: unknown;
  readonly line: number;
  readonly itemLines: readonly number[];
}

/** js-yaml's check for characters YAML does not allow in a stream. */
// eslint-disable-next-line no-control-regex
const NON_PRINTABLE = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x84\x86-\x9F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?:[^\uD800-\uDBFF]|^)[\uDC00-\uDFFF]/;
/** The ASCII characters NON_PRINTABLE matches. */
const ASCII_NON_PRINTABLE = [...Array(0x20).keys(), 0x7f].filter((c) => c !== 0x09 && c !== 0x0a && c !== 0x0d).map((c) => String.fromCharCode(c));

/**
 * NON_PRINTABLE.test(text), about three times faster on ASCII text (kubectl's output): the UTF-8
 * length equals the length only for ASCII, and then one `includes` per control character does.
 */
function hasNonPrintable(text: string): boolean {
  if (Buffer.byteLength(text, 'utf8') !== text.length) return NON_PRINTABLE.test(text);
  for (const c of ASCII_NON_PRINTABLE) if (text.includes(c)) return true;
  return false;
}

/**
 * Whether `text` has `&` after a space or at a line start, even inside a scalar: the snapshot
 * reader's js-yaml path declines such text (an anchor maybe) and the `yaml` package reads it,
 * whose YAML 1.2 core schema differs from js-yaml's (`0b101`, `-0o7` are strings, `+.5` a
 * number): left to them.
 */
function maybeAnchor(text: string): boolean {
  // The snapshot reader's /(^|[\s[{,])&\S/, by indexOf: a fifth of the parse time otherwise.
  for (let i = text.indexOf('&'); i >= 0; i = text.indexOf('&', i + 1)) {
    if ((i === 0 || /[\s[{,]/.test(text[i - 1]!)) && i + 1 < text.length && /\S/.test(text[i + 1]!)) return true;
  }
  return false;
}

/** Thrown inside the parser when the text is outside what it reads; parseKubectlYaml returns undefined then. */
class Unsupported extends Error {}
const UNSUPPORTED = new Unsupported();

/** Deepest nesting the parser follows (beyond: the general path, which reports depth limits). */
const MAX_NESTING = 500;

/**
 * The documents of `text` (see the module comment for what is read), or undefined when the text
 * uses anything else. Documents without content are left out.
 */
export function parseKubectlYaml(text: string): FastDocument[] | undefined {
  if (text.includes('\t') || text.includes('\r') || text.charCodeAt(0) === 0xfeff || hasNonPrintable(text) || maybeAnchor(text)) return undefined;
  try {
    return new Parser(text).documents();
  } catch (err) {
    if (err instanceof Unsupported || err instanceof RangeError) return undefined;
    throw err;
  }
}

const SPACE = 0x20;

class Parser {
  private readonly text: string;
  private readonly end: number;
  /** Start of the current line (after skipping blank and comment lines: a line with content). */
  private lineStart = 0;
  /** 0-based number of the current line. */
  private line = 0;
  /** Where the content of the current line starts (after its indentation, or after `- `). */
  private pos = 0;
  /** Column of `pos`: the indentation the current content counts as. */
  private col = 0;
  /** End of the current line (index of its `\n`, or the text's end). */
  private lineEnd = 0;
  private itemLines: number[] = [];
  private depth = 0;

  constructor(text: string) {
    this.text = text;
    this.end = text.length;
  }

  documents(): FastDocument[] {
    const docs: FastDocument[] = [];
    this.seek(0, 0);
    for (;;) {
      this.skipBlank();
      if (this.pos >= this.end) break;
      if (this.isDocumentMarker()) {
        this.nextLine();
        continue;
      }
      if (this.col !== 0) throw UNSUPPORTED;
      const line = this.line + 1;
      this.itemLines = [];
      const value = this.node(true);
      this.skipBlank();
      if (this.pos < this.end && !this.isDocumentMarker()) throw UNSUPPORTED;
      docs.push({ value, line, itemLines: this.itemLines });
    }
    return docs;
  }

  /** Places the cursor at line `line` starting at index `start` (no skipping). */
  private seek(start: number, line: number): void {
    this.lineStart = start;
    this.line = line;
    let e = this.text.indexOf('\n', start);
    if (e < 0) e = this.end;
    this.lineEnd = e;
    let p = start;
    while (p < e && this.text.charCodeAt(p) === SPACE) p++;
    this.pos = p;
    this.col = p - start;
  }

  private nextLine(): void {
    if (this.lineEnd >= this.end) {
      this.lineStart = this.pos = this.lineEnd = this.end;
      this.col = 0;
      return;
    }
    this.seek(this.lineEnd + 1, this.line + 1);
  }

  /** Skips lines that are empty, spaces only, or comments. */
  private skipBlank(): void {
    while (this.pos < this.end && (this.pos === this.lineEnd || this.text.charCodeAt(this.pos) === 0x23)) this.nextLine();
  }

  /** `---` or `...` at column 0 (anything else starting so is left to the general path). */
  private isDocumentMarker(): boolean {
    if (this.col !== 0) return false;
    const t = this.text;
    const p = this.pos;
    const c = t.charCodeAt(p);
    if ((c !== 0x2d && c !== 0x2e) || t.charCodeAt(p + 1) !== c || t.charCodeAt(p + 2) !== c) return false;
    if (c === 0x2e) throw UNSUPPORTED;
    for (let i = p + 3; i < this.lineEnd; i++) if (t.charCodeAt(i) !== SPACE) throw UNSUPPORTED;
    return true;
  }

  /** True when the current content is a sequence entry (`-` then space or end of line). */
  private isEntry(): boolean {
    if (this.text.charCodeAt(this.pos) !== 0x2d) return false;
    const n = this.pos + 1;
    return n === this.lineEnd || this.text.charCodeAt(n) === SPACE;
  }

  /**
   * The block node starting at the current content (a mapping or a sequence). `top`: the
   * document's root (whose `items` elements get their lines recorded).
   */
  private node(top = false): unknown {
    if (++this.depth > MAX_NESTING) throw UNSUPPORTED;
    const record = this.recordItems;
    this.recordItems = false;
    const value = this.isEntry() ? this.sequence(this.col, record) : this.mapping(this.col, top);
    this.depth--;
    return value;
  }

  /** A block sequence whose entries' `-` are at column `indent`; `record`: record its elements' lines in itemLines. */
  private sequence(indent: number, record: boolean): unknown[] {
    const out: unknown[] = [];
    for (;;) {
      // At an entry: `-` at `indent`.
      const after = this.pos + 1;
      let p = after;
      while (p < this.lineEnd && this.text.charCodeAt(p) === SPACE) p++;
      if (p === this.lineEnd || this.text.charCodeAt(p) === 0x23) {
        if (p < this.lineEnd && p === after) throw UNSUPPORTED;
        // `-` alone: the element is on the following lines, or null.
        this.nextLine();
        this.skipBlank();
        if (this.pos < this.end && !this.isDocumentMarker() && this.col > indent) {
          if (record) this.itemLines.push(this.line + 1);
          out.push(this.element(indent));
        } else {
          // js-yaml reads an entry less indented right after an empty one as this sequence's next.
          if (this.pos < this.end && this.col < indent && this.isEntry()) throw UNSUPPORTED;
          if (record) this.itemLines.push(this.line + 1);
          out.push(null);
        }
      } else {
        this.pos = p;
        this.col = p - this.lineStart;
        if (record) this.itemLines.push(this.line + 1);
        out.push(this.element(indent));
      }
      this.skipBlank();
      // Less indented, or a key at the same indentation (a sequence under its key, kubectl's style):
      // the sequence ends; whoever holds it checks what follows.
      if (this.pos >= this.end || this.isDocumentMarker() || this.col < indent || (this.col === indent && !this.isEntry())) return out;
      if (this.col > indent) throw UNSUPPORTED;
    }
  }

  /** One sequence element at the current content (collection or one-line scalar); `indent`: the sequence's. */
  private element(indent: number): unknown {
    if (this.isEntry() || this.keyEnd() >= 0) return this.node();
    return this.inlineScalar(indent);
  }

  /** Set while the sequence being read is the root mapping's `items`. */
  private recordItems = false;

  /**
   * Index of the `:` that ends the key at the current content, or -1 when the content is not a
   * `key:` (a quoted key is scanned past its closing quote).
   */
  private keyEnd(): number {
    const t = this.text;
    let p = this.pos;
    const c = t.charCodeAt(p);
    if (c === 0x22 || c === 0x27) {
      const close = this.quotedEnd(p);
      if (close < 0) return -1;
      p = close + 1;
      return p < this.lineEnd && t.charCodeAt(p) === 0x3a && (p + 1 === this.lineEnd || t.charCodeAt(p + 1) === SPACE) ? p : -1;
    }
    // Searched on this line only (indexOf would scan on to the next colon, however far).
    for (let i = p; i < this.lineEnd; i++) {
      if (t.charCodeAt(i) === 0x3a && (i + 1 === this.lineEnd || t.charCodeAt(i + 1) === SPACE)) return i;
    }
    return -1;
  }

  /** A block mapping whose keys are at column `indent`; `top`: the document's root. */
  private mapping(indent: number, top: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    const t = this.text;
    for (;;) {
      const colon = this.keyEnd();
      if (colon < 0) throw UNSUPPORTED;
      const key = this.key(this.pos, colon);
      if (Object.hasOwn(out, key)) throw UNSUPPORTED; // js-yaml: duplicated mapping key
      let p = colon + 1;
      while (p < this.lineEnd && t.charCodeAt(p) === SPACE) p++;
      let value: unknown;
      if (p === this.lineEnd || t.charCodeAt(p) === 0x23) {
        if (p < this.lineEnd && p === colon + 1) throw UNSUPPORTED;
        // The value is on the following lines: a deeper node, a sequence at this indentation, or null.
        this.nextLine();
        this.skipBlank();
        if (this.pos < this.end && !this.isDocumentMarker() && (this.col > indent || (this.col === indent && this.isEntry()))) {
          this.recordItems = top && key === 'items';
          value = this.node();
          this.recordItems = false;
        } else {
          value = null;
        }
      } else {
        this.pos = p;
        this.col = p - this.lineStart;
        value = this.inlineScalar(indent);
      }
      out[key] = value;
      this.skipBlank();
      if (this.pos >= this.end || this.isDocumentMarker() || this.col < indent) return out;
      if (this.col > indent || this.isEntry()) throw UNSUPPORTED;
    }
  }

  /** The key text between `start` and the `:` at `colon` (plain or quoted); only keys that are strings for js-yaml. */
  private key(start: number, colon: number): string {
    const t = this.text;
    const c = t.charCodeAt(start);
    let key: string;
    if (c === 0x22 || c === 0x27) {
      key = this.quoted(start, colon - 1);
    } else {
      if (!plainStart(t, start, colon) || t.charCodeAt(colon - 1) === SPACE) throw UNSUPPORTED;
      key = t.slice(start, colon);
      if (key.includes(' #') || typeof resolvePlain(key) !== 'string') throw UNSUPPORTED;
    }
    if (key === '__proto__' || key === '<<') throw UNSUPPORTED;
    return key;
  }

  /**
   * The scalar at the current content, which must end on this line (a literal block scalar ends
   * on later ones); then moves to the next line. `indent`: the enclosing collection's.
   */
  private inlineScalar(indent: number): unknown {
    const t = this.text;
    const p = this.pos;
    const e = this.lineEnd;
    const c = t.charCodeAt(p);
    let value: unknown;
    if (c === 0x22 || c === 0x27) {
      const close = this.quotedEnd(p);
      if (close < 0) return this.foldedQuoted(indent);
      for (let i = close + 1; i < e; i++) if (t.charCodeAt(i) !== SPACE) throw UNSUPPORTED;
      value = this.quoted(p, close);
    } else if (c === 0x7b || c === 0x5b) {
      if (t.charCodeAt(p + 1) !== c + 2) throw UNSUPPORTED; // `{}` / `[]` only
      for (let i = p + 2; i < e; i++) if (t.charCodeAt(i) !== SPACE) throw UNSUPPORTED;
      value = c === 0x7b ? {} : [];
    } else if (c === 0x7c) {
      return this.literal(indent);
    } else {
      if (!plainStart(t, p, e)) throw UNSUPPORTED;
      let s = plainLine(t, p, e);
      // Lines indented deeper right after it continue it, joined by a space (go-yaml folds long
      // strings so): plain text only; blank or comment lines in between are left to js-yaml.
      for (;;) {
        this.nextLine();
        if (this.pos >= this.end || this.pos === this.lineEnd || this.col <= indent || this.isDocumentMarker()) break;
        if (!plainStart(t, this.pos, this.lineEnd)) throw UNSUPPORTED;
        s += ' ' + plainLine(t, this.pos, this.lineEnd);
      }
      value = resolvePlain(s);
      this.skipBlank();
      if (this.pos < this.end && this.col > indent && !this.isDocumentMarker()) throw UNSUPPORTED;
      return value;
    }
    this.nextLine();
    this.skipBlank();
    // A deeper line after a one-line scalar continues it (multi-line scalar): not read here.
    if (this.pos < this.end && this.col > indent && !this.isDocumentMarker()) throw UNSUPPORTED;
    return value;
  }

  /** A literal block scalar (`|` or `|-`) at the current content, its lines indented more than `indent`, as js-yaml reads it. */
  private literal(indent: number): string {
    const t = this.text;
    let p = this.pos + 1;
    let strip = false;
    if (t.charCodeAt(p) === 0x2d) {
      strip = true;
      p++;
    }
    if (p < this.lineEnd && t.charCodeAt(p) !== SPACE) throw UNSUPPORTED; // `|+`, indentation indicators
    for (; p < this.lineEnd; p++) if (t.charCodeAt(p) !== SPACE) throw UNSUPPORTED; // comments
    let textIndent = indent + 1;
    let detected = false;
    let empty = 0;
    let read = false;
    let result = '';
    let lineEnd = this.lineEnd;
    let line = this.line;
    for (;;) {
      if (lineEnd >= this.end) {
        // The end of the text: as a line less indented.
        if (!strip && read) result += '\n';
        this.lineStart = this.pos = this.lineEnd = this.end;
        this.col = 0;
        this.line = line + 1;
        return result;
      }
      const start = lineEnd + 1;
      line++;
      let e = t.indexOf('\n', start);
      if (e < 0) e = this.end;
      let q = start;
      while ((!detected || q - start < textIndent) && q < e && t.charCodeAt(q) === SPACE) q++;
      const lineIndent = q - start;
      if (!detected && lineIndent > textIndent) textIndent = lineIndent;
      if (q === e) {
        empty++;
        lineEnd = e;
        continue;
      }
      if (lineIndent < textIndent) {
        if (!strip && read) result += '\n';
        this.seek(start, line);
        return result;
      }
      result += '\n'.repeat(read ? 1 + empty : empty) + t.slice(q, e);
      read = true;
      detected = true;
      empty = 0;
      lineEnd = e;
    }
  }

  /**
   * A quoted scalar at the current content that goes on over the following lines (indented more
   * than `indent`, none blank): its lines joined by one space, each cut of its surrounding spaces,
   * as go-yaml folds long quoted strings. A double-quoted one with a `\` before its last line is
   * left to js-yaml (escaped line breaks).
   */
  private foldedQuoted(indent: number): string {
    const t = this.text;
    const quote = t.charCodeAt(this.pos);
    const parts: string[] = [];
    let start = this.pos + 1;
    for (;;) {
      const close = this.closingQuote(start, quote);
      if (close >= 0) {
        for (let i = close + 1; i < this.lineEnd; i++) if (t.charCodeAt(i) !== SPACE) throw UNSUPPORTED;
        parts.push(t.slice(start, close));
        break;
      }
      let e = this.lineEnd;
      while (e > start && t.charCodeAt(e - 1) === SPACE) e--;
      const part = t.slice(start, e);
      if (quote === 0x22 && part.includes('\\')) throw UNSUPPORTED;
      parts.push(part);
      this.nextLine();
      if (this.pos >= this.end || this.pos === this.lineEnd || this.col <= indent || this.isDocumentMarker()) throw UNSUPPORTED;
      start = this.pos;
    }
    const value = unquote(parts.join(' '), quote);
    this.nextLine();
    this.skipBlank();
    if (this.pos < this.end && this.col > indent && !this.isDocumentMarker()) throw UNSUPPORTED;
    return value;
  }

  /** Index of the quote closing the quoted scalar opening at `open` on this line, or -1. */
  private quotedEnd(open: number): number {
    return this.closingQuote(open + 1, this.text.charCodeAt(open));
  }

  /** Index of the quote `q` that closes a quoted scalar, searched from `from` to the end of this line, or -1. */
  private closingQuote(from: number, q: number): number {
    const t = this.text;
    for (let i = from; i < this.lineEnd; i++) {
      const c = t.charCodeAt(i);
      if (q === 0x22 && c === 0x5c) i++;
      else if (c === q) {
        if (q === 0x27 && t.charCodeAt(i + 1) === 0x27) i++;
        else return i;
      }
    }
    return -1;
  }

  /** The value of the quoted scalar from `open` to `close` (its quotes). */
  private quoted(open: number, close: number): string {
    return unquote(this.text.slice(open + 1, close), this.text.charCodeAt(open));
  }
}

/** The value of a quoted scalar's `body` (between its quotes; `quote`: the quote's code). */
function unquote(body: string, quote: number): string {
  if (quote === 0x27) return body.includes("''") ? body.replaceAll("''", "'") : body;
  if (!body.includes('\\')) return body;
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      out += c;
      continue;
    }
    const e = body[++i];
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'u': {
        const hex = body.slice(i + 1, i + 5);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw UNSUPPORTED;
        out += String.fromCharCode(parseInt(hex, 16));
        i += 4;
        break;
      }
      default:
        throw UNSUPPORTED;
    }
  }
  return out;
}

/**
 * The text of one line of a plain scalar from `p` to `end` (the line's end), trailing spaces cut.
 * @throws Unsupported when it holds what ends or interrupts a plain scalar (`: `, ` #`, a final `:`).
 */
function plainLine(t: string, p: number, end: number): string {
  while (t.charCodeAt(end - 1) === SPACE) end--;
  const s = t.slice(p, end);
  if (s.charCodeAt(s.length - 1) === 0x3a || s.includes(': ') || s.includes(' #')) throw UNSUPPORTED;
  return s;
}

/** Whether a plain scalar may start at `p` (up to `end`): not an indicator js-yaml treats otherwise. */
function plainStart(t: string, p: number, end: number): boolean {
  if (p >= end) return false;
  switch (t.charCodeAt(p)) {
    case 0x2d:
    case 0x3f: {
      // `-` and `?` start a plain scalar when something other than a space follows.
      const n = t.charCodeAt(p + 1);
      return p + 1 < end && n !== SPACE;
    }
    case 0x3a:
    case 0x2c:
    case 0x5b:
    case 0x5d:
    case 0x7b:
    case 0x7d:
    case 0x23:
    case 0x26:
    case 0x2a:
    case 0x21:
    case 0x7c:
    case 0x3e:
    case 0x27:
    case 0x22:
    case 0x25:
    case 0x40:
    case 0x60:
      return false;
    default:
      return true;
  }
}

const FLOAT = /^(?:[-+]?(?:[0-9]+)(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const FLOAT_SPECIAL = /^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$/;
const INT = /^[-+]?(?:0b[01]+|0x[0-9a-fA-F]+|0o[0-7]+|[0-9]+)$/;

/**
 * A plain scalar's value under js-yaml's CORE_SCHEMA: null, bool, int, float (in that order,
 * js-yaml 4's rules), else the string itself.
 */
export function resolvePlain(s: string): unknown {
  const c = s.charCodeAt(0);
  // Only null, booleans and numbers start otherwise; everything else is a string.
  if (!((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x7e || c === 0x6e || c === 0x4e || c === 0x74 || c === 0x54 || c === 0x66 || c === 0x46)) return s;
  switch (s) {
    case '~':
    case 'null':
    case 'Null':
    case 'NULL':
      return null;
    case 'true':
    case 'True':
    case 'TRUE':
      return true;
    case 'false':
    case 'False':
    case 'FALSE':
      return false;
  }
  if (INT.test(s)) {
    const v = parseInteger(s);
    if (Number.isFinite(v)) return v;
  }
  if (FLOAT.test(s) && (Number.isFinite(parseFloat(s)) || FLOAT_SPECIAL.test(s))) {
    let v = s.toLowerCase();
    const sign = v[0] === '-' ? -1 : 1;
    if (v[0] === '+' || v[0] === '-') v = v.slice(1);
    if (v === '.inf') return sign === 1 ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
    if (v === '.nan') return NaN;
    return sign * parseFloat(v);
  }
  return s;
}

/** js-yaml 4's integer construction (sign, then 0b/0x/0o or decimal). */
function parseInteger(data: string): number {
  let value = data;
  let sign = 1;
  if (value[0] === '-' || value[0] === '+') {
    if (value[0] === '-') sign = -1;
    value = value.slice(1);
  }
  if (value === '0') return 0;
  if (value[0] === '0') {
    if (value[1] === 'b') return sign * parseInt(value.slice(2), 2);
    if (value[1] === 'x') return sign * parseInt(value.slice(2), 16);
    if (value[1] === 'o') return sign * parseInt(value.slice(2), 8);
  }
  return sign * parseInt(value, 10);
}
