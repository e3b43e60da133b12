// The programs tests run as child processes — the server (src/main.ts), the operator CLI
// (src/admin/cli.ts) and the logging process of test/log-stdout.test.ts — bundled once per test run
// (vitest globalSetup) and run with plain `node`: compiling them with tsx at each start cost about
// a second of CPU per process. The real `npm start` and `npm run admin` are each run by one test
// (test/config.test.ts, test/admin.test.ts).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const OUT = path.join(ROOT, 'test/artifacts/processes');

/** The bundled entry points (built by `setup`). */
export const BUNDLED_SERVER = path.join(OUT, 'server.js');
export const BUNDLED_ADMIN = path.join(OUT, 'admin.js');
export const BUNDLED_LOG_WRITER = path.join(OUT, 'log-writer.js');

/** vitest globalSetup: builds the bundle afresh each run (well under a second: only our own code). */
export async function setup(): Promise<void> {
  const { build } = await import('esbuild');
  const { outputFiles } = await build({
    write: false,
    entryPoints: {
      server: path.join(ROOT, 'src/main.ts'),
      admin: path.join(ROOT, 'src/admin/cli.ts'),
      'log-writer': path.join(ROOT, 'test/support/log-writer.ts'),
    },
    outdir: OUT,
    bundle: true,
    // node_modules load as usual, from their own places: only our TypeScript is bundled.
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: `node${process.versions.node}`,
    logLevel: 'warning',
    plugins: [
      {
        // Files our code reads at run time (views/, next to src/) are found from the source file's
        // own location, as under tsx, not from the bundle's.
        name: 'source-location',
        setup(bundle) {
          bundle.onLoad({ filter: /\.ts$/ }, async (args) => {
            const source = await fs.promises.readFile(args.path, 'utf8');
            return { contents: source.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href)), loader: 'ts' };
          });
        },
      },
    ],
  });
  // Each file replaced whole (written aside, then renamed): another run may be starting these now.
  fs.mkdirSync(OUT, { recursive: true });
  for (const file of outputFiles) {
    const aside = `${file.path}.${process.pid}`;
    fs.writeFileSync(aside, file.contents);
    fs.renameSync(aside, file.path);
  }
}
