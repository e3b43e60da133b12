// What an approval of a metadata-document or registered client covers (src/cimd/approval.ts): an
// approved client gets what it asks within the approval, the rest is a pending change; approving
// the change widens the approval; a document never narrows the approval itself.
import { describe, expect, it } from 'vitest';
import { fingerprint, isUserScope, pendingChange, widenApproval, withinApproval, type ClientAsks } from '../../src/cimd/approval.ts';
import { ALL_SCOPES } from '../../src/scopes.ts';

const A = 'https://agent.example/a';
const B = 'https://agent.example/b';
const approved: ClientAsks = { scopes: ['PROFILE_READ', 'BOOKING_READ'], redirectUris: [A, B], links: { policyUri: 'https://agent.example/p', tosUri: null } };

describe('an approved client', () => {
  it('asking for what was approved gets it; nothing pending', () => {
    expect(withinApproval(approved, approved)).toEqual({ scopes: ['PROFILE_READ', 'BOOKING_READ'], redirectUris: [A, B], links: approved.links });
    expect(pendingChange(approved, approved)).toBeUndefined();
  });

  it('a narrower document applies at once, with nothing pending', () => {
    const narrower = { scopes: ['PROFILE_READ'], redirectUris: [B], links: { policyUri: null, tosUri: null } };
    expect(withinApproval(narrower, approved)).toEqual({ scopes: ['PROFILE_READ'], redirectUris: [B], links: { policyUri: null, tosUri: null } });
    expect(pendingChange(narrower, approved)).toBeUndefined();
  });

  it('a wider one gets what was approved; the rest — a scope, a redirect URI, a new or changed link — is pending', () => {
    const wider = { scopes: ['PROFILE_READ', 'TEAM_BOOKING_WRITE'], redirectUris: [A, 'https://evil.example/cb'], links: { policyUri: 'https://agent.example/p2', tosUri: 'https://agent.example/t' } };
    expect(withinApproval(wider, approved)).toEqual({ scopes: ['PROFILE_READ'], redirectUris: [A], links: { policyUri: null, tosUri: null } });
    const change = pendingChange(wider, approved)!;
    expect(change).toEqual({ addScopes: ['TEAM_BOOKING_WRITE'], addRedirectUris: ['https://evil.example/cb'], setLinks: { policyUri: 'https://agent.example/p2', tosUri: 'https://agent.example/t' } });
    const widened = widenApproval(approved, change);
    expect(withinApproval(wider, widened)).toEqual({ scopes: wider.scopes, redirectUris: wider.redirectUris, links: wider.links });
    // What was approved before stays approved: a document asking for it again needs no review.
    expect(widened.redirectUris).toEqual([A, B, 'https://evil.example/cb']);
    expect(pendingChange(approved, widened)?.setLinks).toEqual({ policyUri: 'https://agent.example/p', tosUri: null });
  });

  it('no scope declared is every user scope, on either side', () => {
    const none = { ...approved, scopes: [] };
    const userScopes = ALL_SCOPES.filter(isUserScope);
    expect(withinApproval(none, none).scopes).toEqual(userScopes);
    expect(pendingChange({ ...none, scopes: ['ORG_BOOKING_READ', 'PROFILE_READ'] }, none)?.addScopes).toEqual(['ORG_BOOKING_READ']);
    expect(pendingChange(none, approved)?.addScopes).toEqual(userScopes.filter((s) => !approved.scopes.includes(s)));
    expect(widenApproval(none, { addScopes: ['ORG_BOOKING_READ'], addRedirectUris: [], setLinks: null }).scopes).toEqual([...userScopes, 'ORG_BOOKING_READ']);
  });

  it('a fingerprint tells what was shown apart', () => {
    const change = pendingChange({ ...approved, scopes: ['TEAM_BOOKING_READ'] }, approved)!;
    expect(fingerprint(change)).toBe(fingerprint({ ...change }));
    expect(fingerprint(change)).not.toBe(fingerprint({ ...change, addScopes: ['ORG_BOOKING_READ'] }));
    expect(fingerprint(approved)).not.toBe(fingerprint({ ...approved, redirectUris: [A] }));
  });
});
