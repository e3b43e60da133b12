// The legacy migration guard judges the switch, not the calendar (docs/legacy-migration.md): per legacy client,
// when the app first sent an authorization request with scope, and the requests without scope
// that still came after it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('legacy_scope_switch', (t) => {
    t.text('client_id').primary();
    t.timestamp('first_scoped_at', { useTz: true }).notNullable();
    t.integer('unscoped_since').notNullable().defaultTo(0);
    t.timestamp('last_unscoped_at', { useTz: true });
  });
  // From the daily counts of 004 (30 days kept): the switch is dated to the start of the day of
  // the first scoped request, so that day's requests without scope count as after it — when in
  // doubt the guard refuses rather than lets users be locked out.
  await knex.raw(`
    insert into legacy_scope_switch (client_id, first_scoped_at, unscoped_since, last_unscoped_at)
    select s.client_id, s.first_day::timestamptz,
           coalesce(sum(u.count), 0), max(u.last_at)
    from (select client_id, min(day) as first_day from client_scope_requests where scope_set <> '' group by client_id) s
    left join client_scope_requests u on u.client_id = s.client_id and u.scope_set = '' and u.day >= s.first_day
    group by s.client_id, s.first_day`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('legacy_scope_switch');
}
