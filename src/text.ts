// One rule for text that people read (client and user names) and that the operator scripts print.
// Control characters (C0, DEL, C1) can forge lines in logs and terminal output or drive a terminal
// (ESC sequences); line separators and text-direction marks, embeddings, overrides and isolates
// can make a name display as something it is not ("Trojan Source"). A leaf module: no app imports.

const UNSAFE_CLASS = '[\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069]';
const UNSAFE = new RegExp(UNSAFE_CLASS);
const UNSAFE_ALL = new RegExp(UNSAFE_CLASS, 'g');

/** True when the text has a control, line-separator or text-direction character. */
export function hasUnsafeText(value: string): boolean {
  return UNSAFE.test(value);
}

const hex = (c: string, width: number) => c.charCodeAt(0).toString(16).padStart(width, '0');
const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** For terminal output: each such character as a visible escape (\n, \x1b, \u202e) instead of acting. */
export function escapeUnsafeText(value: string): string {
  return value.replace(UNSAFE_ALL, (c) => NAMED[c] ?? (c.charCodeAt(0) <= 0xff ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}

/**
 * JSON text with the characters JSON.stringify leaves raw (DEL, C1, bidi, U+2028/9) as \u escapes.
 * They can only occur inside strings, so the document still parses to the same value.
 */
export function escapeUnsafeJson(json: string): string {
  return json.replace(UNSAFE_ALL, (c) => `\\u${hex(c, 4)}`);
}
