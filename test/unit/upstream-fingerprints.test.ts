// Issue 34 item 2: the fast path (src/fast/) mirrors these files of oidc-provider. When an upgrade
// changes any of them, this test fails naming it: read the upstream change, bring the fast path
// (and src/seams/oidc-provider.ts, LIBRARY_VERSION, package.json's exact pin) in line, then update the
// fingerprint here.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const LIBRARY = path.dirname(createRequire(import.meta.url).resolve('oidc-provider/package.json'));

/** Each mirrored file, what of ours follows it, and its sha256 in the pinned version. */
const MIRRORED: Array<[file: string, mirroredBy: string, sha256: string]> = [
  ['lib/actions/grants/refresh_token.js', 'src/fast/refresh.ts (the rotating refresh)', 'd3bcebb1e448545e0deff5b935f6233964b69c40f5ab2f639c6fdb5e81c5c1d2'],
  ['lib/helpers/grant_common.js', 'src/fast/refresh.ts (the new access token)', '2a9abbce97278836411bdbdcf8d310e6760d525ec815ad163f376ef55fa3e740'],
  ['lib/actions/token.js', 'src/fast/refresh.ts (grant.success)', 'b02246009810acd67c5323277171f6c06919273b2733a874537be02beaa75c09'],
  ['lib/actions/introspection.js', 'src/fast/introspection.ts', '9c51064bc58f06a872c703aaf398778e51df288a7d1e5bd2bd587b677bc06575'],
  ['lib/shared/client_auth.js', 'src/fast/credentials.ts, src/fast/back-channel.ts (client authentication)', '2ef832c2ce4093cbbb0a3eaf80ef7295410f0e2180bcfe8b036ec5021dd55f15'],
  ['lib/models/base_model.js', 'src/seams/oidc-provider.ts (fromStore, toSave, grantWithId: the id given to a Grant kept; makeTokenIds: refresh tokens and codes get opaque ids here only), the events the fast refresh emits', '77623c1d7d76d840f93f58b1aef57713c7d48dde1f689686208827320ef06d2c'],
  ['lib/models/refresh_token.js', 'src/fast/refresh.ts (consume, session binding skipped)', '395763fba05b7deb4e3297adc41ed6f9142602fab9b64270b58e84533f1dbd9c'],
  ['lib/models/formats/opaque.js', 'src/seams/oidc-provider.ts (toSave: extraTokenClaims called with the token, outside a request), src/fast/introspection.ts (extra)', '116a242cbe98d59b50d2c25e6c9b1810b97bc9a3d505a6ac3f03c54d43e9cb15'],
  ['lib/models/formats/index.js', 'src/seams/oidc-provider.ts (makeTokenIds: the library decides an access token\'s format in generateTokenId; only opaque ids are ours)', '2e89935f9f822621edc3d9fb5de22ddf273953e78d140c3010ae2f67cf533fab'],
  ['lib/shared/selective_body.js', 'src/seams/oidc-provider.ts (withBodyToRead)', '850da4702de01145f3a718d8a17387b3bbd6e90ba43749c9e0a05cab8de1bad8'],
  ['lib/actions/authorization/pushed_authorization_requests.js', 'src/seams/oidc-provider.ts (PUSHED_REQUEST_TTL: its MAX_TTL; pushedRequestClientId: a pushed request stored as an unsigned JWT its client issued), src/oauth/par.ts, src/storage/artifacts.ts (kept past expiry: found ignoring it)', 'a3d434f0aabf6d7e5d3302c9c2f273dcd4167eb92d7baabc0a717be9ffb4698b'],
  ['lib/helpers/resolve_resource.js', 'src/fast/refresh.ts and src/fast/assumptions.ts (no `resource` asked, none granted: no resource, as with the feature off), src/oauth/resources.ts (checkGrantedResource)', 'ad1c38e95cb32d47fe54336078be0a6e49f58806510293b489e55a8eebd19a2a'],
];

const sha256 = (file: string) => createHash('sha256').update(fs.readFileSync(path.join(LIBRARY, file))).digest('hex');

describe('the upstream files the fast path mirrors', () => {
  it('are unchanged since the fast path was checked against them', () => {
    const changed = MIRRORED.filter(([file, , expected]) => sha256(file) !== expected).map(([file, ours]) => `oidc-provider/${file} changed: review ${ours}`);
    expect(changed, changed.join('\n')).toEqual([]);
  });
});
