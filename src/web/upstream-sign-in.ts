// "Sign in with <upstream>" (docs/accounts.md): the sign-in page's way to the upstream OpenID
// provider and back. Its state, nonce and PKCE verifier are kept server-side (with the provider's
// artifacts, so in Redis or SQL as they are), under a random id whose signed cookie is scoped to
// the callback path; a return is taken once (a single flight claims it), so a replayed return —
// this browser's or another's — is refused. Back from the upstream, the person is the user linked
// to the upstream account (src/accounts/upstream-links.ts) and signs in exactly as after a
// password: the pages' sign-in (account.ts signInToPages), or the authorization flow's, whose
// interaction cookie only its own path sees — so the callback hands the user over, once, to that
// path (interactions.ts, INTERACTION_UPSTREAM_SUFFIX).
import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { ArtifactStorage } from '../storage/artifacts.ts';
import type { CachedDb } from '../storage/record-cache.ts';
import { PageRefusal } from '../errors.ts';
import { INTERACTION_PATH, INTERACTION_UPSTREAM_SUFFIX, LOGIN_PATH, UPSTREAM_CALLBACK_PATH } from '../http/paths.ts';
import { UpstreamAnswerRefused, UpstreamUnavailable, type UpstreamChecks, type UpstreamClient } from '../accounts/upstream.ts';
import { userForUpstream } from '../accounts/upstream-links.ts';
import type { User } from '../accounts/store.ts';

/** How long a trip to the upstream may take: a sign-in there, a password typed, a second factor. */
const TRIP_SECONDS = 10 * 60;
/** The callback's hand-over to the authorization flow: one redirect. */
const HANDOVER_SECONDS = 60;

/** Where the sign-in was started: the pages' /login (then `next`) or an authorization request's interaction. */
export type SignInTarget = { kind: 'pages'; next: string; remember: boolean } | { kind: 'interaction'; uid: string; remember: boolean };

// Stored by field names the provider's models do not use ("state" is an interaction's).
interface Trip {
  checks: UpstreamChecks;
  target: SignInTarget;
}
interface Handover {
  interaction: string;
  userId: number;
  remember: boolean;
  idToken: string;
}

export interface UpstreamSignIn {
  readonly name: string;
  /** Sends the browser to the upstream, its checks kept for the return. */
  begin(ctx: Context, target: SignInTarget): Promise<void>;
  /** The return: the user it signs in as, and where the sign-in was started. */
  callback(ctx: Context): Promise<{ user: User; target: SignInTarget; idToken: string }>;
  /** The authorization flow's step: hands the user the callback found to this interaction's path, once. */
  handOver(ctx: Context, uid: string, user: User, remember: boolean, idToken: string): Promise<void>;
  /** That step's side: the user handed to interaction `uid` in this browser, taken once. */
  takeHandover(ctx: Context, uid: string): Promise<{ userId: number; remember: boolean; idToken: string | undefined }>;
  /** Where Sign out continues: the upstream's logout of the session this ID token started, back to our sign-in page; undefined when it has none. */
  signOutUrl(idToken: string): Promise<string | undefined>;
}

const tripCookie = (ctx: Context) => (ctx.cookies.secure ? '__Secure-upstream_trip' : 'upstream_trip');
const handoverCookie = (ctx: Context) => (ctx.cookies.secure ? '__Secure-upstream_handover' : 'upstream_handover');
const cookieOptions = (ctx: Context, path: string, seconds: number) => ({ path, maxAge: seconds * 1000, httpOnly: true, sameSite: 'lax' as const, signed: true, overwrite: true, secure: ctx.cookies.secure === true });

export function upstreamSignIn({ upstream, artifacts, users, appUrl }: { upstream: UpstreamClient; artifacts: Pick<ArtifactStorage, 'adapterFor' | 'flights'>; users: CachedDb; appUrl: string }): UpstreamSignIn {
  const trips: Adapter = artifacts.adapterFor('UpstreamTrip');
  const redirectUri = `${appUrl}${UPSTREAM_CALLBACK_PATH}`;
  const name = upstream.name;

  const startAgain = { whatToDo: `Go back to the sign-in page and choose "Sign in with ${name}" again.` };
  const expired = () =>
    new PageRefusal(400, 'invalid_request', { title: 'This sign-in cannot be used', happened: `This return from ${name} is not one this browser is waiting for: it was already used, it expired, or it was started elsewhere. Nobody was signed in.`, ...startAgain });
  const unavailable = (err: UpstreamUnavailable) =>
    new PageRefusal(502, 'temporarily_unavailable', { title: `${name} cannot be reached`, happened: `Signing in with ${name} did not work: ${err.message}. Nobody was signed in and nothing was changed.`, whatToDo: `Try again in a few minutes; if it goes on, tell the operators of this site.` });

  /** A single-use record: true exactly once across every instance. */
  const claim = (kind: string, id: string, seconds: number) => artifacts.flights.claim(`upstream:${kind}:${id}`, seconds);

  return {
    name,

    async begin(ctx, target) {
      let started: Awaited<ReturnType<UpstreamClient['authorizationUrl']>>;
      try {
        started = await upstream.authorizationUrl(redirectUri);
      } catch (err) {
        if (err instanceof UpstreamUnavailable) throw unavailable(err);
        throw err;
      }
      const id = randomBytes(24).toString('base64url');
      await trips.upsert(id, { checks: started.checks, target } satisfies Trip as unknown as AdapterPayload, TRIP_SECONDS);
      ctx.cookies.set(tripCookie(ctx), id, cookieOptions(ctx, UPSTREAM_CALLBACK_PATH, TRIP_SECONDS));
      ctx.status = 303;
      ctx.redirect(started.url);
    },

    async callback(ctx) {
      const id = ctx.cookies.get(tripCookie(ctx), { signed: true });
      ctx.cookies.set(tripCookie(ctx), null, cookieOptions(ctx, UPSTREAM_CALLBACK_PATH, 0));
      const trip = id ? ((await trips.find(id)) as unknown as Trip | undefined) : undefined;
      if (!id || typeof trip?.checks?.state !== 'string' || !(await claim('trip', id, TRIP_SECONDS))) throw expired();
      await trips.destroy(id);

      const error = typeof ctx.query.error === 'string' ? ctx.query.error : undefined;
      if (error === 'access_denied') throw new PageRefusal(403, 'access_denied', { title: 'Not signed in', happened: `You did not allow signing in with ${name}. Nobody was signed in.`, ...startAgain });
      let account;
      try {
        account = await upstream.finish(new URL(ctx.originalUrl, appUrl), redirectUri, trip.checks);
      } catch (err) {
        if (err instanceof UpstreamUnavailable) throw unavailable(err);
        if (err instanceof UpstreamAnswerRefused) {
          throw new PageRefusal(400, 'invalid_request', { title: `${name}'s answer was refused`, happened: `The answer from ${name} did not pass this site's checks (${err.message}). Nobody was signed in and nothing was changed.`, ...startAgain });
        }
        throw err;
      }
      const outcome = await userForUpstream(users, account, upstream.linking, name);
      if ('refused' in outcome) throw new PageRefusal(403, 'access_denied', { title: 'No account here', happened: outcome.refused, whatToDo: `Go back to the sign-in page (${LOGIN_PATH}) once this is sorted out.` });
      return { user: outcome.user, target: trip.target, idToken: account.idToken };
    },

    async handOver(ctx, uid, user, remember, idToken) {
      const id = randomBytes(24).toString('base64url');
      await trips.upsert(id, { interaction: uid, userId: user.id, remember, idToken } satisfies Handover as unknown as AdapterPayload, HANDOVER_SECONDS);
      const path = `${INTERACTION_PATH}/${uid}${INTERACTION_UPSTREAM_SUFFIX}`;
      ctx.cookies.set(handoverCookie(ctx), id, cookieOptions(ctx, path, HANDOVER_SECONDS));
      ctx.status = 303;
      ctx.redirect(path);
    },

    async takeHandover(ctx, uid) {
      const path = `${INTERACTION_PATH}/${uid}${INTERACTION_UPSTREAM_SUFFIX}`;
      const id = ctx.cookies.get(handoverCookie(ctx), { signed: true });
      ctx.cookies.set(handoverCookie(ctx), null, cookieOptions(ctx, path, 0));
      const handover = id ? ((await trips.find(id)) as unknown as Handover | undefined) : undefined;
      if (!id || handover?.interaction !== uid || typeof handover.userId !== 'number' || !(await claim('handover', id, HANDOVER_SECONDS))) throw expired();
      await trips.destroy(id);
      return { userId: handover.userId, remember: handover.remember === true, idToken: typeof handover.idToken === 'string' ? handover.idToken : undefined };
    },

    signOutUrl: (idToken) => upstream.endSessionUrl(idToken, `${appUrl}${LOGIN_PATH}`),
  };
}
