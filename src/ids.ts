// Integer ids (a secret, a pending change, a user) as they arrive in page URLs and operator-script
// arguments. Their columns are PostgreSQL `integer`: a larger number reaching a query is a database
// error (a 500, a script printing SQL), so anything else is "no such id" before any query.
export const MAX_INTEGER_ID = 2 ** 31 - 1;

/** The id in `value`: digits only, no leading zero, from 1 to 2^31-1; otherwise undefined. */
export function parseIntegerId(value: string | undefined): number | undefined {
  if (value === undefined || !/^[1-9][0-9]{0,9}$/.test(value)) return undefined;
  const id = Number(value);
  return id <= MAX_INTEGER_ID ? id : undefined;
}
