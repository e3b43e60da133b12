// Host blocks name a domain (or an IP address) and cover every port and every name under it
// (src/cimd/host-blocks.ts); before, a block was a host:port matched exactly. A block of
// `example.com:8443` becomes one of `example.com`, which covers what it covered and more: the same
// site on another port was never another app.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const rows: Array<{ host: string; blocked_by: string; reason: string | null; blocked_at: Date }> = await knex('cimd_blocked_hosts').select();
  for (const row of rows) {
    let name: string;
    try {
      name = new URL(`https://${row.host}/`).hostname.toLowerCase().replace(/\.$/, '');
    } catch {
      continue;
    }
    if (name === row.host) continue;
    await knex('cimd_blocked_hosts').insert({ ...row, host: name }).onConflict('host').ignore();
    await knex('cimd_blocked_hosts').where('host', row.host).delete();
  }
}

export async function down(): Promise<void> {
  // The ports are not kept: a block of the name covers what the old ones did.
}
