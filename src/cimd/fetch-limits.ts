// How many metadata documents this server fetches for anyone (docs/agents.md, docs/security.md):
// a request naming an unknown URL as client_id makes it reach out, so each fetch of a document
// never seen spends a point of the requesting address's budget (a few a minute, more an hour) and
// one of the target site's (its registrable domain: one site cannot be hammered through us from
// many addresses). Decided before fetching; counted in Redis when there is one, so every instance
// shares the counts. A document already kept, or once fetched and used (a known client), is not
// limited: its refetches come at most once per cache time.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { consume, type limiterFactory } from '../limits/limiter.ts';
import type { CimdFetchLimits } from '../config.ts';
import { addressGroup } from '../http/client-address.ts';

export interface FetchBudget {
  /** Why a fetch for `address` (undefined: no request's address) from `site` may not be made now, else undefined; spends a point when it may. */
  refusal(address: string | undefined, site: string): Promise<string | undefined>;
}

export const UNLIMITED_FETCHES: FetchBudget = { refusal: async () => undefined };

export function fetchBudget(limits: CimdFetchLimits, limiter: ReturnType<typeof limiterFactory>): FetchBudget {
  const perAddress: Array<[RateLimiterAbstract, number, string]> = [
    [limiter({ keyPrefix: 'cimd-fetch-ip-minute', points: limits.perAddressPerMinute, duration: 60 }), limits.perAddressPerMinute, 'a minute'],
    [limiter({ keyPrefix: 'cimd-fetch-ip-hour', points: limits.perAddressPerHour, duration: 3600 }), limits.perAddressPerHour, 'an hour'],
  ];
  const perSite = limiter({ keyPrefix: 'cimd-fetch-site', points: limits.perSitePerMinute, duration: 60 });
  return {
    async refusal(address, site) {
      if (address !== undefined) {
        const group = addressGroup(address); // an IPv6 /64 counts as one address, as in every per-address limit
        const spent = await Promise.all(perAddress.map(([l]) => consume(l, group)));
        const over = perAddress.findIndex(([, budget], i) => spent[i]!.consumedPoints > budget);
        // Over its own budget: the site's is not spent for it.
        if (over >= 0) return `${address} is over its budget of ${perAddress[over]![1]} document fetches ${perAddress[over]![2]}`;
      }
      const forSite = await consume(perSite, site);
      if (forSite.consumedPoints > limits.perSitePerMinute) return `${site} is over its budget of ${limits.perSitePerMinute} document fetches a minute`;
      return undefined;
    },
  };
}
