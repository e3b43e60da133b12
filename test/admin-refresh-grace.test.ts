// `clients set-refresh-grace ID SECONDS`: each client's refresh grace window (src/oauth/refresh-grace.ts),
// printed with the client and audited like set-rate-limit; bad input is refused with a reason.
import { describe, expect, it } from 'vitest';
import { expectRefusal, useAdminCli } from './support/admin-cli.ts';

describe('clients set-refresh-grace', () => {
  const cli = useAdminCli();

  it('sets, shows and resets the window, audited; refuses what is not 0 to 60 or "default"', async () => {
    const created = JSON.parse((await cli.json('clients', 'create', '--name', 'Phone App', '--redirect-uri', 'com.example.app:/cb', '--scope', 'PROFILE_READ', '--public')).stdout);
    expect(created.refresh_grace_seconds).toBe('default');
    const set = await cli.json('clients', 'set-refresh-grace', created.client_id, '0');
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ client_id: created.client_id, refresh_grace_seconds: 0 });
    expect(JSON.parse((await cli.json('clients', 'show', created.client_id)).stdout).refresh_grace_seconds).toBe(0);
    expect(JSON.parse((await cli.json('clients', 'set-refresh-grace', created.client_id, '60')).stdout).refresh_grace_seconds).toBe(60);
    expect(JSON.parse((await cli.json('clients', 'set-refresh-grace', created.client_id, 'default')).stdout).refresh_grace_seconds).toBe('default');

    const audit = await cli.pg.db('audit_events').where({ action: 'client.refresh_grace_set', client_id: created.client_id }).orderBy('id').select('details');
    expect(audit.map((row: { details: unknown }) => row.details)).toEqual([
      { from: null, to: 0 },
      { from: 0, to: 60 },
      { from: 60, to: null },
    ]);

    for (const bad of ['61', '-1', '1.5', 'ten', '', '1e1']) {
      expectRefusal(await cli.json('clients', 'set-refresh-grace', created.client_id, bad), /refresh grace window must be a whole number of seconds from 0 \(off\) to 60/);
    }
    expectRefusal(await cli.json('clients', 'set-refresh-grace', 'no-such-client', '5'), /no client/);
  });
});
