// Which part of the admin review table is shown: a status tab, a search, a page. Read from the
// query string (a bad value is a clear 400, never a database error) and written back into the
// tabs, the pager and the forms, so an action returns the administrator to where they were.
import { InputError } from '../errors.ts';
import { hasUnsafeText } from '../text.ts';

/** The tabs in the order shown: the queue first. */
export const TABS = ['pending', 'approved', 'rejected', 'suspended', 'all'] as const;
export type Tab = (typeof TABS)[number];
export const PER_PAGE = 50;
const MAX_SEARCH = 200;

export interface ReviewView {
  tab: Tab;
  search: string;
  page: number;
}

export const DEFAULT_VIEW: ReviewView = { tab: 'pending', search: '', page: 1 };

type Query = Record<string, string | string[] | undefined>;

export function parseReviewView(query: Query): ReviewView {
  const one = (name: string) => {
    const value = query[name];
    if (Array.isArray(value)) throw new InputError(`give ${name} once`);
    return value;
  };
  const tab = one('status') ?? DEFAULT_VIEW.tab;
  if (!(TABS as readonly string[]).includes(tab)) throw new InputError(`there is no "${tab}" tab; choose one of ${TABS.join(', ')}`);
  const search = (one('q') ?? '').trim();
  if (search.length > MAX_SEARCH || hasUnsafeText(search)) throw new InputError(`search for at most ${MAX_SEARCH} printable characters`);
  const page = one('page') ?? '1';
  if (!/^[1-9][0-9]{0,5}$/.test(page)) throw new InputError('the page must be a whole number from 1 to 999999');
  return { tab: tab as Tab, search, page: Number(page) };
}

/** The query string of a view ('' for the default one), with some parts changed. */
export function viewQuery(view: ReviewView, changes: Partial<ReviewView> = {}): string {
  const { tab, search, page } = { ...view, ...changes };
  const params = new URLSearchParams();
  if (tab !== DEFAULT_VIEW.tab) params.set('status', tab);
  if (search) params.set('q', search);
  if (page !== 1) params.set('page', String(page));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** The view a form came from (its `view` field); the default when it is not a valid one. */
export function viewFromForm(value: string): ReviewView {
  try {
    return parseReviewView(Object.fromEntries(new URLSearchParams(value)));
  } catch {
    return DEFAULT_VIEW;
  }
}
