// The sign-in check's proof of work runs in a worker served from our own /assets (strict CSP: no
// blob: workers, nothing inline). Registered before the user starts the check.
globalThis.$altcha.algorithms.set('PBKDF2/SHA-256', () => new Worker('/assets/altcha-pbkdf2.js'));
