// Reads that concurrent callers share without ever getting an answer older than their call. A
// caller who asks while a read of the same key is on its way does not join it (it may have been
// sent before a change the caller must see): it joins the next read of that key, sent as soon as
// the one on its way returns. So every answer comes from a read sent after its caller asked, and
// a burst of N callers costs one read at a time instead of N.

interface Slot<T> {
  running?: Promise<T>;
  next?: Promise<T>;
}

export function freshSharedReads<K, T>(read: (key: K) => Promise<T>): (key: K) => Promise<T> {
  const slots = new Map<K, Slot<T>>();

  function send(key: K, slot: Slot<T>): Promise<T> {
    const sent = read(key);
    slot.running = sent;
    const settled = () => {
      if (slot.running !== sent) return;
      slot.running = undefined;
      if (!slot.next) slots.delete(key);
    };
    sent.then(settled, settled);
    return sent;
  }

  return (key) => {
    let slot = slots.get(key);
    if (!slot) slots.set(key, (slot = {}));
    if (slot.next) return slot.next;
    const { running } = slot;
    if (!running) return send(key, slot);
    const current = slot;
    // Starts once the read on its way has settled (its own `settled` runs first).
    current.next = running.then(
      () => undefined,
      () => undefined,
    ).then(() => {
      current.next = undefined;
      return send(key, current);
    });
    return current.next;
  };
}
