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

/** All of standard input (a key set: `clients set-keys --jwks -`). */
async function allOfStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const code = await runAdmin(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  stdin: firstLine,
  stdinText: allOfStdin,
});
process.exit(code);
