// Preloaded into every server the benchmark starts (`node --import tsx --import bench/lib/watchdog.ts`):
// if the runner disappears without cleaning up (killed with SIGKILL, crashed), its IPC channel
// closes and the server shuts itself down the way it does on SIGTERM. Changes nothing else.
if (process.channel) {
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
}
