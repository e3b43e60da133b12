// Which store the servers keep the provider's artifacts (codes, tokens, grants) in, written by every
// server on start (src/storage/store-record.ts). The operator scripts read it: a suspension or a
// secret revocation run without the servers' Redis would report success and leave every token in
// Redis alive. One row; never a password or a URL: the Redis mode, the key prefix and a random
// mark that the same Redis holds, so a script can tell it reached the servers' Redis.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('artifact_store', (t) => {
    t.smallint('id').primary().checkIn(['1']);
    t.text('kind').notNullable().checkIn(['sql', 'redis']);
    t.text('redis_mode').checkIn(['single', 'cluster', 'sentinel']);
    t.text('redis_prefix');
    t.text('redis_mark');
    t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('artifact_store');
}
