// The key an address counts under in per-address limits (src/http/client-address.ts). Pure.
import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../src/http/client-address.ts';

describe('addressGroup', () => {
  it('counts an IPv6 address as its /64, whatever its spelling', () => {
    expect(addressGroup('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:DB8:1:2::9')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:0db8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:1:3::9')).not.toBe(addressGroup('2001:db8:1:2::9'));
    expect(addressGroup('fe80::1%eth0')).toBe(addressGroup('fe80::2'));
  });

  it('counts an IPv4 address, and an IPv4-mapped IPv6 one, as the IPv4 address', () => {
    expect(addressGroup('192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('::FFFF:192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('192.0.2.8')).not.toBe(addressGroup('192.0.2.7'));
  });

  it('leaves what is no address as it is', () => {
    expect(addressGroup('')).toBe('');
    expect(addressGroup('not an address')).toBe('not an address');
  });
});
