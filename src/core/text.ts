/**
 * Text from outside (a speaker's member names, an API server's or a speaker's error text) made
 * safe for a terminal: C0 control characters (U+0000–U+001F), DEL (U+007F) and C1 control
 * characters (U+0080–U+009F) are written as `\xHH`, so an ANSI escape sequence or a carriage return
 * in a member name is printed, not obeyed. For the text renderings only; JSON and YAML output keep
 * the strings as they are. Pure, so both the renderers (src/render) and the shell's one-line error
 * texts (src/kube) use it without one of those folders depending on the other.
 */

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** `s` with every C0/C1 control character and DEL as `\xHH` (lower-case hex). Pure; idempotent. */
export function escapeControl(s: string): string {
  return s.replace(CONTROL, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
