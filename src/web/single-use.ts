// Single-use forms (issue 38 point 4): a state-changing form sent twice — a reload of the page its
// answer showed (the browser sends the POST again), the back button and a second click, a double
// click — changes something once. Each rendered form carries its own CSRF token (src/http/csrf.ts,
// `issued.nonce.mac`); the first submission claims (session or visitor, path, nonce, the fields
// sent), and a repeat finds the claim: it changes nothing and is sent, with a note saying so, where
// the first answer led. Another button or other values on the same rendered page (a confirmation
// step, a corrected field) are another submission. A one-time secret shown by the first answer is never shown again (only its hash is
// stored): the note says where to make a new one. A refused submission (4xx) gives its claim back,
// so the corrected form can be sent.
import { createHash } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Db } from '../storage/db.ts';
import { csrfForm } from '../http/csrf.ts';
import { csrfBinding } from './session.ts';
import { field, redirectWithFlash } from './forms.ts';
import { PageRefusal } from '../errors.ts';
import { POLICY } from '../settings.ts';

/** How long a rendered form can be sent (and its claim kept): a day, longer than a sign-in session. */
export const FORM_LIFETIME_SECONDS = POLICY.FORM_LIFETIME_SECONDS.value;

declare module 'koa' {
  interface DefaultState {
    /** Where a repeat of this submission is sent (the page of what it made), when its answer is a page rather than a redirect. */
    formDoneAt?: string;
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

/** The form's fields but its token, in a fixed order: what makes two submissions "the same". */
function fieldsSent(ctx: Context): string {
  const body = (ctx.request.body ?? {}) as Record<string, unknown>;
  return JSON.stringify(Object.keys(body).filter((k) => k !== 'csrf').sort().map((k) => [k, body[k]]));
}

export interface SingleUseOptions {
  /** The note a repeat gets. */
  already: string;
  /** Where a repeat goes while the first submission is still running (or led nowhere): the form's page. */
  fallback(ctx: Context): string;
}

/** The step after requireCsrf on a state-changing POST. */
export function singleUse(db: Db, { already, fallback }: SingleUseOptions) {
  return async function singleUseForm(ctx: Context, next: Next) {
    const form = csrfForm(field(ctx, 'csrf'));
    if (!form || Date.now() / 1000 - form.issuedAt > FORM_LIFETIME_SECONDS) {
      throw new PageRefusal(403, 'invalid_request', { title: 'This form has expired', happened: 'The form is too old to be sent. Please go back, reload the page and try again.' });
    }
    const id = digest(`${csrfBinding(ctx)}\n${ctx.path}\n${form.nonce}\n${fieldsSent(ctx)}`);
    const claimed = await db('form_submissions').insert({ id }).onConflict('id').ignore().returning('id');
    if (claimed.length === 0) {
      const first = await db('form_submissions').where('id', id).first<{ location: string | null } | undefined>('location');
      return redirectWithFlash(ctx, first?.location ?? fallback(ctx), { type: 'ok', text: already });
    }
    // Claims older than any form that could still be sent.
    await db('form_submissions').where('created_at', '<', new Date(Date.now() - FORM_LIFETIME_SECONDS * 1000 - 3600_000)).delete();
    try {
      await next();
    } catch (err) {
      await db('form_submissions').where('id', id).delete();
      throw err;
    }
    if (ctx.status >= 400) {
      await db('form_submissions').where('id', id).delete();
      return;
    }
    const location = ctx.state.formDoneAt ?? (ctx.status >= 300 && ctx.status < 400 ? ctx.response.get('Location') : '') ?? '';
    await db('form_submissions').where('id', id).update({ location: location || fallback(ctx) });
  };
}
