// Back after sign-in or consent re-requests the finished step's page, whose interaction the
// provider has already ended. This browser is told that the step finished and offered to continue
// that authorization, instead of "interaction session not found". What it needs — the outcome and
// the authorization request's parameters (client_id, redirect_uri, state…) — stays on the server,
// with the provider's artifacts; the browser's cookie, scoped to that page's path, holds only a
// random id (an authorization request's parameters are never in a cookie).
import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import type { Adapter } from 'oidc-provider';
import { APP_AUTHORIZE_PATH, CONNECTED_APPS_PATH, INTERACTION_PATH } from '../http/paths.ts';
import { page } from './forms.ts';

export type StepOutcome = 'signed_in' | 'allowed' | 'denied';
const OUTCOMES: readonly string[] = ['signed_in', 'allowed', 'denied'] satisfies StepOutcome[];

interface FinishedStep {
  /** The interaction whose page this was: the step is shown finished at that address only. */
  interaction: string;
  outcome: StepOutcome;
  /** The authorization request's parameters, to start it again. */
  params: Record<string, string>;
}

/** What a new authorization request needs to continue where this one was (no prompt: no loop back to sign-in). */
const RESTART_PARAMS = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'code_challenge', 'code_challenge_method'];
const MIN_SECONDS = 60;
const MAX_SECONDS = 3600;

// Path-scoped, so never __Host- (which requires path /); __Secure- where cookies are Secure.
const cookieName = (ctx: Context) => (ctx.cookies.secure ? '__Secure-finished_step' : 'finished_step');

interface Interaction {
  uid: string;
  exp: number;
  params: Record<string, unknown>;
}

export interface FinishedSteps {
  /** Remembers for this browser that the step of `interaction` finished, for as long as the interaction would have lived. */
  remember(ctx: Context, interaction: Interaction, outcome: StepOutcome): Promise<void>;
  /**
   * Shows "this step is finished" when this browser finished the step at this address; false when
   * it did not (then the caller's error stands). Continuing starts the same authorization again,
   * only while the app may still be authorized.
   */
  show(ctx: Context, provider: Provider): Promise<boolean>;
}

/** Finished steps kept in `store` (the provider's artifact storage, under a hash of the id: artifact-key.ts). */
export function finishedSteps(store: Adapter): FinishedSteps {
  async function finishedStep(ctx: Context): Promise<FinishedStep | undefined> {
    const id = ctx.cookies.get(cookieName(ctx), { signed: true });
    if (!id) return undefined;
    const step = (await store.find(id)) as Partial<FinishedStep> | undefined;
    if (!step || step.interaction !== ctx.params.uid || !OUTCOMES.includes(step.outcome!) || typeof step.params?.client_id !== 'string') return undefined;
    return step as FinishedStep;
  }

  return {
    async remember(ctx, interaction, outcome) {
      const params: Record<string, string> = {};
      for (const name of RESTART_PARAMS) {
        const value = interaction.params[name];
        if (typeof value === 'string') params[name] = value;
      }
      const seconds = Math.min(MAX_SECONDS, Math.max(MIN_SECONDS, interaction.exp - Math.floor(Date.now() / 1000)));
      const id = randomBytes(24).toString('base64url');
      await store.upsert(id, { interaction: interaction.uid, outcome, params } satisfies FinishedStep, seconds);
      ctx.cookies.set(cookieName(ctx), id, {
        path: `${INTERACTION_PATH}/${interaction.uid}`,
        maxAge: seconds * 1000,
        httpOnly: true,
        sameSite: 'lax',
        signed: true,
        overwrite: true,
        secure: ctx.cookies.secure === true,
      });
    },
    async show(ctx, provider) {
      const step = await finishedStep(ctx);
      if (!step) return false;
      await showStep(ctx, provider, step);
      return true;
    },
  };
}

const DONE: Record<StepOutcome, (app: string) => string> = {
  signed_in: (app) => `You already signed in to continue to ${app}.`,
  allowed: (app) => `You already allowed ${app} to access your account.`,
  denied: (app) => `You already declined ${app}'s request. Nothing was shared with it.`,
};

async function showStep(ctx: Context, provider: Provider, step: FinishedStep): Promise<void> {
  const client = await provider.Client.find(step.params.client_id!);
  const app = client?.clientName ?? 'the app';
  const again = client ? `${APP_AUTHORIZE_PATH}?${new URLSearchParams(step.params)}` : undefined;
  await page(ctx, 'step-finished', {
    title: 'This step is finished',
    done: DONE[step.outcome](app),
    next: again
      ? `If ${app} did not open, or you came back here by mistake, continue and we will take you on from where you are now.`
      : `${app === 'the app' ? 'The app' : app} can no longer be authorized here. Go back to it to start again.`,
    wayOn: [
      ...(again ? [{ href: again, text: step.outcome === 'denied' ? `Start again with ${app}` : `Continue to ${app}` }] : []),
      { href: CONNECTED_APPS_PATH, text: 'Go to your apps with access' },
    ],
  });
}
