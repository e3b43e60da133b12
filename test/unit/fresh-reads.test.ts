// freshSharedReads (src/storage/fresh-reads.ts): concurrent callers share reads, but never one
// sent before they asked — the guarantee behind "a revoked secret is refused at once".
import { describe, expect, it } from 'vitest';
import { freshSharedReads } from '../../src/storage/fresh-reads.ts';

/** A store whose reads the test answers by hand, each seeing the value at the time it was sent. */
function manualStore() {
  let value = 'v0';
  const sent: Array<{ key: string; saw: string; answer: () => void; fail: (err: Error) => void }> = [];
  const read = (key: string) =>
    new Promise<string>((resolve, reject) => {
      const saw = value;
      sent.push({ key, saw, answer: () => resolve(saw), fail: reject });
    });
  return { read, sent, set: (v: string) => (value = v) };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('freshSharedReads', () => {
  it('gives a caller who asks during a read the next read, sent after it asked, shared with the others who asked meanwhile', async () => {
    const store = manualStore();
    const get = freshSharedReads(store.read);
    const first = get('a');
    expect(store.sent).toHaveLength(1);
    store.set('v1'); // changed after the first read was sent…
    const [second, third] = [get('a'), get('a')]; // …and before these asked
    await tick();
    expect(store.sent).toHaveLength(1); // they wait for the next read, not a read each
    store.sent[0]!.answer();
    expect(await first).toBe('v0');
    await tick();
    expect(store.sent).toHaveLength(2);
    store.sent[1]!.answer();
    expect(await second).toBe('v1');
    expect(await third).toBe('v1');
  });

  it('keeps keys apart, and reads again for a caller after everything settled', async () => {
    const store = manualStore();
    const get = freshSharedReads(store.read);
    const [a, b] = [get('a'), get('b')];
    expect(store.sent.map((s) => s.key)).toEqual(['a', 'b']);
    store.sent.forEach((s) => s.answer());
    await Promise.all([a, b]);
    store.set('v2');
    const again = get('a');
    expect(store.sent).toHaveLength(3);
    store.sent[2]!.answer();
    expect(await again).toBe('v2');
  });

  it('gives a failed read to its callers only; the next caller reads anew', async () => {
    const store = manualStore();
    const get = freshSharedReads(store.read);
    const first = get('a');
    const second = get('a');
    store.sent[0]!.fail(new Error('down'));
    await expect(first).rejects.toThrow('down');
    await tick();
    expect(store.sent).toHaveLength(2); // the queued caller's read is sent regardless
    store.sent[1]!.answer();
    expect(await second).toBe('v0');
    const third = get('a');
    expect(store.sent).toHaveLength(3);
    store.sent[2]!.answer();
    expect(await third).toBe('v0');
  });
});
