// `npm run --silent admin -- <command>`: the operator scripts (CONTRACT 5); see program.ts.
import { runAdmin } from './program.ts';

const code = await runAdmin(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});
process.exit(code);
