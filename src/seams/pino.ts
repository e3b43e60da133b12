// The seam to pino's insides: the stream a logger writes to and its bindings, already serialised,
// so the one line per request is written to the same stream without pino's general serialiser
// (src/http/envelope.ts requestLineWriter; docs/benchmark.md).
import pino from 'pino';
import type { UpstreamFile } from './upstream.ts';

export const UPSTREAM: readonly UpstreamFile[] = [
  { file: 'pino/lib/symbols.js', sha256: 'dadab5081a033a2cddde17f73243df27ab3c6ebfa7ccabaa6d1e660b7b6c4ae3', what: 'streamSym and chindingsSym name the stream and the bindings' },
  { file: 'pino/lib/proto.js', sha256: 'ea4a0bed0ffb711a76493967d5841464dfbb85e03ae9ca5f424cf1e45738c4b9', what: 'a line is written whole to this[streamSym]; a child keeps its bindings in this[chindingsSym]' },
  { file: 'pino/lib/tools.js', sha256: 'f40299d3a55ef799489dc8cc91bd8c1b3546e7cbf8d2be4c7dba80416bb4dd4b', what: 'asJson: level, time, then the bindings (a string that starts with a comma), then the fields, then msg' },
];

/** Where `log` writes its lines, and its bindings as pino puts them in each line (`,"key":value…`, or ''). */
export function loggerStream(log: pino.Logger): { stream: { write(text: string): unknown }; bindings: string } {
  const { streamSym, chindingsSym } = pino.symbols;
  const internals = log as unknown as Record<symbol, unknown>;
  return { stream: internals[streamSym] as { write(text: string): unknown }, bindings: String(internals[chindingsSym] ?? '') };
}
