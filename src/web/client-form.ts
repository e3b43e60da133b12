// The client forms of the developer settings, checked field by field so that each refusal stands
// next to the field it is about, in the pages' own words (the operator scripts keep theirs).
import { InputError } from '../errors.ts';
import type { ClientKind } from '../clients/model.ts';
import { validateClientName, validateClientScopes, validateRedirectUris } from '../clients/validate.ts';

/** Messages by form field name ('name', 'kind', 'redirect_uris', 'scope', …). */
export type FieldErrors = Record<string, string>;

/** A refusal as the pages print it: a sentence. */
export function sentence(message: string): string {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

/** Runs one field's check; its refusal becomes that field's message. */
export function checkField(errors: FieldErrors, field: string, check: () => unknown): void {
  try {
    check();
  } catch (err) {
    if (!(err instanceof InputError)) throw err;
    errors[field] = sentence(err.message);
  }
}

export interface ClientForm {
  name?: string;
  kind?: string;
  redirectUris?: string[];
  scopes?: string[];
}

export const isPageKind = (kind: string | undefined): kind is 'confidential' | 'public' => kind === 'confidential' || kind === 'public';

/** The fields the form sent, each checked on its own; a legacy client may keep no scopes. */
export function checkClientForm(form: ClientForm, { kind, legacy = false }: { kind?: ClientKind; legacy?: boolean } = {}): FieldErrors {
  const errors: FieldErrors = {};
  if (form.name !== undefined) checkField(errors, 'name', () => validateClientName(form.name!));
  if (form.kind !== undefined && !isPageKind(form.kind)) errors.kind = 'Choose the kind of client.';
  const uriKind = kind ?? (isPageKind(form.kind) ? form.kind : 'confidential');
  if (form.redirectUris !== undefined) checkField(errors, 'redirect_uris', () => validateRedirectUris(form.redirectUris!, uriKind));
  if (form.scopes !== undefined) {
    if (form.scopes.length === 0 && !legacy) errors.scope = 'Choose at least one scope.';
    else checkField(errors, 'scope', () => validateClientScopes(form.scopes!, true));
  }
  return errors;
}
