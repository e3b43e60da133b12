// What a host block covers (issue 45 item 8; docs/agents.md): a domain and every name under it,
// on any port, by the Public Suffix List (tldts, its private section included); an IP exactly.
import { describe, expect, it } from 'vitest';
import { blockName, covers, hostnameOf, siteOf } from '../../src/cimd/host-blocks.ts';

const blocks = (block: string, url: string) => covers(blockName(block), hostnameOf(url));

describe('host blocks', () => {
  it('a domain covers itself and every name under it, on any port', () => {
    expect(blocks('example.com', 'https://example.com/doc.json')).toBe(true);
    expect(blocks('example.com', 'https://example.com:8443/doc.json')).toBe(true);
    expect(blocks('example.com', 'https://a.example.com/doc.json')).toBe(true);
    expect(blocks('example.com', 'https://b.a.example.com:8443/doc.json')).toBe(true);
    // Case and a trailing dot are the same name.
    expect(blocks('Example.COM', 'https://A.EXAMPLE.com./doc.json')).toBe(true);
  });

  it('nothing beside it: another domain ending in the same letters, the parent, a sibling', () => {
    expect(blocks('example.com', 'https://notexample.com/doc.json')).toBe(false);
    expect(blocks('example.com', 'https://example.com.evil.net/doc.json')).toBe(false);
    expect(blocks('a.example.com', 'https://example.com/doc.json')).toBe(false);
    expect(blocks('a.example.com', 'https://b.example.com/doc.json')).toBe(false);
    expect(blocks('a.example.com', 'https://x.a.example.com/doc.json')).toBe(true);
  });

  it('a block given with a port covers every port (the same site on another port is no other app)', () => {
    expect(blockName('agent.example.com:8443')).toBe('agent.example.com');
    expect(blocks('agent.example.com:8443', 'https://agent.example.com:9443/doc.json')).toBe(true);
  });

  it('shared hosting by the Public Suffix List: user.github.io covers only itself; github.io or a bare suffix cannot be blocked', () => {
    expect(blocks('user.github.io', 'https://user.github.io/doc.json')).toBe(true);
    expect(blocks('user.github.io', 'https://other.github.io/doc.json')).toBe(false);
    expect(siteOf('a.user.github.io')).toBe('user.github.io');
    expect(siteOf('b.a.example.co.uk')).toBe('example.co.uk');
    for (const suffix of ['github.io', 'com', 'co.uk']) expect(() => blockName(suffix)).toThrow(/public suffix/);
    expect(blocks('example.co.uk', 'https://shop.example.co.uk/doc.json')).toBe(true);
    expect(blocks('example.co.uk', 'https://other.co.uk/doc.json')).toBe(false);
  });

  it('an IP address exactly, on any port; never by a shared suffix', () => {
    expect(blockName('127.0.0.1:8080')).toBe('127.0.0.1');
    expect(blocks('127.0.0.1', 'http://127.0.0.1:4000/doc.json')).toBe(true);
    expect(blocks('127.0.0.1', 'http://127.0.0.12/doc.json')).toBe(false);
    expect(blocks('0.0.1', 'http://127.0.0.1/doc.json')).toBe(false);
    expect(blocks('[::1]', 'https://[::1]:8443/doc.json')).toBe(true);
    expect(siteOf('127.0.0.1')).toBe('127.0.0.1');
  });

  it('not a host name: refused with the reason', () => {
    for (const value of ['not a host', 'https://example.com/', 'example.com/path', '', 'a..b']) expect(() => blockName(value), value).toThrow(/not a host name|public suffix/);
  });
});
