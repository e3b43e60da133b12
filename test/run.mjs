// `npm test`: the type check beside the suite rather than before it, one command that fails if
// either fails. A full check takes 11–40 s of one core (incremental, below); run first, it was as much wall clock. Beside
// vitest, at a lower priority, it takes the CPU vitest leaves idle (its start, the last long
// files) and yields the rest. Its report is printed after vitest's. Arguments go to vitest.
import { spawn } from 'node:child_process';
import os from 'node:os';

const children = new Set();

/** Runs a command of node_modules/.bin (npm puts it on PATH); resolves to its exit code. */
function run(command, args, { quiet = false, nice = 0 } = {}) {
  const child = spawn(command, args, { stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'] });
  children.add(child);
  if (nice) {
    try {
      os.setPriority(child.pid, nice);
    } catch {
      // Not allowed here: it runs at the same priority, which is only slower.
    }
  }
  let output = '';
  child.stdout?.on('data', (d) => (output += d));
  child.stderr?.on('data', (d) => (output += d));
  return new Promise((resolve) => {
    child.on('error', (err) => {
      output += `${command}: ${err.message}\n`;
      resolve({ code: 1, output });
    });
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code: code ?? 1, output });
    });
  });
}

// Stopped (Ctrl-C, CI's timeout): both go.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exit(1);
  });
}

// Incremental: the check of an unchanged tree reuses the last run's (test/artifacts/, not in git):
// 11 s of CPU instead of 40. A clean clone checks everything.
const types = run('tsc', ['--noEmit', '--incremental', '--tsBuildInfoFile', 'test/artifacts/tsc.tsbuildinfo'], { quiet: true, nice: 10 });
const tests = await run('vitest', ['run', ...process.argv.slice(2)]);
const checked = await types;
if (checked.code !== 0) process.stderr.write(`\nThe type check (tsc --noEmit) failed:\n${checked.output}`);
else process.stdout.write('The type check (tsc --noEmit) passed.\n');
process.exit(tests.code !== 0 ? tests.code : checked.code);
