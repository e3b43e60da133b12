// The client directory's pure rules (src/directory/): the status machine of every kind, ids of no
// kind, and the facts read back from a provider view.
import { describe, expect, it } from 'vitest';
import { mayMove, statusAskedBy } from '../../src/directory/status.ts';
import { idOfNoKind } from '../../src/client-lookup/lookup.ts';
import { factsOf, isUnreviewed, reviewOf, usableBy } from '../../src/directory/facts.ts';

describe('the status machine', () => {
  it("the registry's decisions: approve and reject a pending client, suspend an approved one, reinstate a suspended one", () => {
    expect(mayMove('registry', 'pending', 'approved')).toBe(true);
    expect(mayMove('registry', 'pending', 'rejected')).toBe(true);
    expect(mayMove('registry', 'approved', 'suspended')).toBe(true);
    expect(mayMove('registry', 'suspended', 'approved')).toBe(true);
    expect(mayMove('registry', 'pending', 'suspended')).toBe(false);
    expect(mayMove('registry', 'rejected', 'approved')).toBe(false);
    expect(mayMove('registry', 'approved', 'rejected')).toBe(false);
  });

  it.each(['document', 'registered'] as const)('a %s client: approved or rejected from unreviewed, and either taken back by the other; never suspended', (source) => {
    expect(mayMove(source, 'unreviewed', 'approved')).toBe(true);
    expect(mayMove(source, 'unreviewed', 'rejected')).toBe(true);
    expect(mayMove(source, 'approved', 'rejected')).toBe(true);
    expect(mayMove(source, 'rejected', 'approved')).toBe(true);
    expect(mayMove(source, 'approved', 'unreviewed')).toBe(false);
    expect(mayMove(source, 'approved', 'suspended')).toBe(false);
    expect(() => statusAskedBy(source, 'suspend')).toThrow(/approved or rejected, not suspended: reject it/);
    expect(statusAskedBy(source, 'approve')).toBe('approved');
  });

  it('suspend asks a registry client for suspended', () => {
    expect(statusAskedBy('registry', 'suspend')).toBe('suspended');
  });
});

describe('ids of no kind', () => {
  it('empty, over-long, spaces or control characters: refused; every kind of id passes', () => {
    expect(idOfNoKind('')).toMatch(/empty/);
    expect(idOfNoKind('x'.repeat(2001))).toMatch(/2001 characters \(at most 2000\)/);
    for (const id of ['a b', 'a\tb', 'a\nb', 'nul\u0000', '\u007f']) expect(idOfNoKind(id), JSON.stringify(id)).toMatch(/spaces or control characters/);
    for (const id of ['0123456789abcdef0123456789abcdef', 'https://agent.example.com/client.json', 'AbCdEfGhIjKlMnOpQrStUv', 'no-such-client']) expect(idOfNoKind(id)).toBeUndefined();
  });
});

describe('the facts of a provider view', () => {
  it('a registry view has no review; a pending one is usable only by its owner', () => {
    const pending = { client_id: 'c', pending_owner: '7' };
    expect(reviewOf(pending)).toBeUndefined();
    expect(usableBy(pending, '7')).toBe(true);
    expect(usableBy(pending, '8')).toBe(false);
    expect(usableBy(pending, undefined)).toBe(false);
    expect(usableBy({ pending_owner: null }, undefined)).toBe(true);
    expect(usableBy(undefined, undefined)).toBe(true);
  });

  it('a reviewed kind: unreviewed until approved; a registered one has no host', () => {
    expect(isUnreviewed({ cimd_status: 'unreviewed', cimd_host: 'agent.example.com' })).toBe(true);
    expect(isUnreviewed({ cimd_status: 'approved' })).toBe(false);
    expect(isUnreviewed(undefined)).toBe(false);
    expect(reviewOf({ cimd_status: 'approved' })).toEqual({ status: 'approved', host: null });
    expect(factsOf(undefined)).toEqual({});
  });
});
