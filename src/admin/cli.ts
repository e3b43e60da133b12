// `npm run --silent admin -- <command>`: the operator scripts (docs/operations.md); see program.ts.
import readline from 'node:readline';
import { runAdmin } from './program.ts';

/** The first line of standard input ('' at once when it is empty): `--password-stdin` needs no more. */
async function firstLine(): Promise<string> {
  const lines = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return '';
}

const code = await runAdmin(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: firstLine,
});
process.exit(code);
