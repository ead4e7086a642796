/** Reading explain's output in tests: the labelled head lines of the text, the findings of the JSON. */

/** One finding as `explain -o json` carries it. */
export interface Finding {
  id: string;
  severity: string;
  message: string;
  fix: string;
}

/** The value of each `Label:  value` line among the first `n` lines of explain's text (first one wins). */
export function head(text: string, n = 6): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of text.split('\n').slice(0, n)) {
    const m = /^([A-Z][A-Za-z ]*): +(.*)$/.exec(l);
    if (m && !(m[1]! in out)) out[m[1]!] = m[2]!;
  }
  return out;
}
