// The two internals of oidc-provider that src/oauth/built-clients.ts reaches (the package ships no
// types for them).
declare module 'oidc-provider/lib/helpers/weak_cache.js' {
  export default function instance(provider: object): Record<string, unknown> | undefined;
}
declare module 'oidc-provider/lib/helpers/lru.js' {
  export default class LRU {
    constructor(options: { maxSize: number });
    get(key: string): unknown;
    set(key: string, value: unknown): this;
  }
}
