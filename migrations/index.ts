// Migrations are listed here rather than globbed from disk, so they run the same under
// tsx, vitest and any bundler. Append new ones; never edit or reorder applied ones.
import type { Knex } from 'knex';
import * as m001 from './001_initial.ts';
import * as m002 from './002_artifact_client_index.ts';
import * as m003 from './003_audit_events.ts';
import * as m004 from './004_legacy_migration.ts';
import * as m005 from './005_web_application.ts';
import * as m006 from './006_client_rate_limit.ts';
import * as m007 from './007_legacy_switch.ts';
import * as m008 from './008_drop_device_flow.ts';
import * as m009 from './009_resource_servers.ts';
import * as m010 from './010_client_links.ts';
import * as m011 from './011_review_and_grant_use.ts';
import * as m012 from './012_webhooks.ts';
import * as m013 from './013_client_secret_notify.ts';
import * as m014 from './014_secret_use_quiet.ts';
import * as m015 from './015_change_review_links.ts';
import * as m017 from './017_client_refresh_grace.ts';
import * as m019 from './019_artifact_store.ts';
import * as m020 from './020_webhook_secrets.ts';
import * as m021 from './021_organizations.ts';
import * as m022 from './022_grant_bindings.ts';
import * as m023 from './023_secret_expiry.ts';
import * as m024 from './024_credential_leaks.ts';
import * as m025 from './025_resource_uri.ts';
import * as m026 from './026_cimd_clients.ts';
import * as m027 from './027_form_submissions.ts';
import * as m028 from './028_host_blocks_by_name.ts';
import * as m029 from './029_cimd_approved_asks.ts';
import * as m030 from './030_leak_reports_of_every_client.ts';
import * as m031 from './031_client_dpop.ts';
import * as m032 from './032_client_par.ts';
import * as m033 from './033_client_keys.ts';
import * as m034 from './034_signing_key_times.ts';
import * as m035 from './035_upstream_links.ts';
import * as m036 from './036_high_trust.ts';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const migrations: Record<string, Migration> = {
  '001_initial': m001,
  '002_artifact_client_index': m002,
  '003_audit_events': m003,
  '004_legacy_migration': m004,
  '005_web_application': m005,
  '006_client_rate_limit': m006,
  '007_legacy_switch': m007,
  '008_drop_device_flow': m008,
  '009_resource_servers': m009,
  '010_client_links': m010,
  '011_review_and_grant_use': m011,
  '012_webhooks': m012,
  '013_client_secret_notify': m013,
  '014_secret_use_quiet': m014,
  '015_change_review_links': m015,
  '017_client_refresh_grace': m017,
  '019_artifact_store': m019,
  '020_webhook_secrets': m020,
  '021_organizations': m021,
  '022_grant_bindings': m022,
  '023_secret_expiry': m023,
  '024_credential_leaks': m024,
  '025_resource_uri': m025,
  '026_cimd_clients': m026,
  '027_form_submissions': m027,
  '028_host_blocks_by_name': m028,
  '029_cimd_approved_asks': m029,
  '030_leak_reports_of_every_client': m030,
  '031_client_dpop': m031,
  '032_client_par': m032,
  '033_client_keys': m033,
  '034_signing_key_times': m034,
  '035_upstream_links': m035,
  '036_high_trust': m036,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
