// Planning an owner's edit: a pure function of (the client now, the form), no storage involved.
import { describe, expect, it } from 'vitest';
import { planEdit } from '../../src/clients/edit-plan.ts';
import type { ClientRecord } from '../../src/clients/model.ts';
import { InputError } from '../../src/errors.ts';

const NO_LINKS = { policyUri: null, tosUri: null };
const uris = (n: number) => Array.from({ length: n }, (_, i) => `https://app.example.com/cb${i}`);

function client(overrides: Partial<ClientRecord> = {}): ClientRecord {
  return {
    clientId: 'c1',
    name: 'App',
    kind: 'confidential',
    status: 'approved',
    legacy: false,
    scopes: ['PROFILE_READ', 'BOOKING_READ'],
    optionalScopes: [],
    redirectUris: uris(2),
    ownerUserId: 1,
    tokenRequestsPerMinute: null,
    refreshGraceSeconds: null,
    policyUri: null,
    tosUri: null,
    createdAt: new Date(0),
    updatedAt: new Date(0),
    ...overrides,
  };
}

describe('planEdit', () => {
  it('applies everything at once to a client that has not been reviewed yet', () => {
    const pending = client({ status: 'pending', redirectUris: uris(10) });
    // Replacing one of ten redirect URIs: the final list has ten, never eleven on the way.
    const requested = { scopes: ['PROFILE_READ', 'SCHEDULE_READ'], redirectUris: [...uris(9), 'https://new.example.com/cb'] };
    expect(planEdit(pending, requested)).toEqual({ scopes: requested.scopes, redirectUris: requested.redirectUris, links: NO_LINKS });
  });

  it('applies narrowing of a reviewed client at once', () => {
    expect(planEdit(client(), { scopes: ['PROFILE_READ'], redirectUris: uris(1) })).toEqual({ scopes: ['PROFILE_READ'], redirectUris: uris(1), links: NO_LINKS });
  });

  it('holds widening of a reviewed client for review, applying its narrowing parts now', () => {
    const plan = planEdit(client(), { scopes: ['PROFILE_READ', 'SCHEDULE_READ'], redirectUris: [uris(2)[1]!, 'https://new.example.com/cb'] });
    expect(plan).toEqual({
      scopes: ['PROFILE_READ'],
      redirectUris: [uris(2)[1]],
      links: NO_LINKS,
      pending: { addScopes: ['SCHEDULE_READ'], addRedirectUris: ['https://new.example.com/cb'], toFullAccess: false },
    });
  });

  it('refuses to drop every approved redirect URI while new ones wait for review', () => {
    expect(() => planEdit(client(), { scopes: ['PROFILE_READ'], redirectUris: ['https://new.example.com/cb'] })).toThrow(/keep at least one of the approved redirect URIs/);
  });

  it("treats selecting a legacy client's scopes as narrowing (spec 5.6 b), even beside a new redirect URI", () => {
    const legacy = client({ legacy: true, scopes: [] });
    expect(planEdit(legacy, { scopes: ['PROFILE_READ'], redirectUris: uris(2) })).toEqual({ scopes: ['PROFILE_READ'], redirectUris: uris(2), links: NO_LINKS });
    const withUri = planEdit(legacy, { scopes: ['PROFILE_READ'], redirectUris: [...uris(2), 'https://new.example.com/cb'] });
    expect(withUri.scopes).toEqual(['PROFILE_READ']);
    expect(withUri.pending).toEqual({ addScopes: [], addRedirectUris: ['https://new.example.com/cb'], toFullAccess: false });
  });

  it('never lets an edit turn a scoped client unscoped: back to none waits for review, whatever the status', () => {
    for (const status of ['approved', 'suspended', 'pending'] as const) {
      const migrated = client({ legacy: true, status, scopes: ['PROFILE_READ'] });
      expect(planEdit(migrated, { scopes: [], redirectUris: uris(2) })).toEqual({
        scopes: ['PROFILE_READ'],
        redirectUris: uris(2),
        links: NO_LINKS,
        pending: { addScopes: [], addRedirectUris: [], toFullAccess: true },
      });
    }
  });

  it('refuses to leave a reviewed client without any approved scope while new ones wait', () => {
    for (const legacy of [true, false]) {
      expect(() => planEdit(client({ legacy, scopes: ['PROFILE_READ'] }), { scopes: ['BOOKING_READ'], redirectUris: uris(2) })).toThrow(/keep at least one of the approved scopes/);
    }
  });

  it('holds a new or changed link of a reviewed client for review and removes one at once', () => {
    const linked = client({ policyUri: 'https://a.example/p', tosUri: 'https://a.example/t' });
    const links = { policyUri: 'https://b.example/p', tosUri: null };
    expect(planEdit(linked, { scopes: linked.scopes, redirectUris: uris(2), links })).toEqual({
      scopes: linked.scopes,
      redirectUris: uris(2),
      links: { policyUri: 'https://a.example/p', tosUri: null },
      pending: { addScopes: [], addRedirectUris: [], toFullAccess: false, setLinks: links },
    });
    // Before review, links change at once: the approval reviews the client as it then is.
    expect(planEdit({ ...linked, status: 'pending' }, { scopes: linked.scopes, redirectUris: uris(2), links }).links).toEqual(links);
  });

  it('validates what the form asks for', () => {
    expect(() => planEdit(client(), { scopes: ['NOT_A_SCOPE'], redirectUris: uris(1) })).toThrow(InputError);
    expect(() => planEdit(client(), { scopes: [], redirectUris: uris(1) })).toThrow(/at least one scope/);
    expect(() => planEdit(client(), { scopes: ['PROFILE_READ'], redirectUris: uris(11) })).toThrow(/at most 10/);
    expect(() => planEdit(client(), { scopes: ['PROFILE_READ'], redirectUris: [] })).toThrow(/at least one redirect URI/);
  });
});
