// Bounds for tests whose length is their own work: hundreds of sign-ins (each a password check), a
// browser walked through a page's every state. Under a full parallel run their CPU is shared four
// ways; on a slow host (2.3x slower than usual, seen 2026-11-28) they passed alone in seconds but
// ran past the 30 s default. A bound, not a wait: a test that passes ends at once.
export const CPU_BOUND_TEST_MS = 120_000;
