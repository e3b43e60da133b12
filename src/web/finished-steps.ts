// Back after sign-in or consent re-requests the finished step's page, whose interaction the
// provider has already ended. A cookie scoped to that page's path remembers, in this browser only,
// that the step finished and which authorization it belonged to: the page then says the step is
// done and offers to continue that authorization, instead of "interaction session not found".
import type { Context } from 'koa';
import type Provider from 'oidc-provider';
import { APP_AUTHORIZE_PATH, CONNECTED_APPS_PATH, INTERACTION_PATH } from '../http/paths.ts';
import { page } from './forms.ts';

export type StepOutcome = 'signed_in' | 'allowed' | 'denied';

interface FinishedStep {
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

/** Remembers in this browser that the step of `interaction` finished, for as long as the interaction would have lived. */
export function rememberFinishedStep(ctx: Context, interaction: Interaction, outcome: StepOutcome): void {
  const params: Record<string, string> = {};
  for (const name of RESTART_PARAMS) {
    const value = interaction.params[name];
    if (typeof value === 'string') params[name] = value;
  }
  const seconds = Math.min(MAX_SECONDS, Math.max(MIN_SECONDS, interaction.exp - Math.floor(Date.now() / 1000)));
  const value = Buffer.from(JSON.stringify({ outcome, params } satisfies FinishedStep)).toString('base64url');
  ctx.cookies.set(cookieName(ctx), value, {
    path: `${INTERACTION_PATH}/${interaction.uid}`,
    maxAge: seconds * 1000,
    httpOnly: true,
    sameSite: 'lax',
    signed: true,
    overwrite: true,
    secure: ctx.cookies.secure === true,
  });
}

function finishedStep(ctx: Context): FinishedStep | undefined {
  const raw = ctx.cookies.get(cookieName(ctx), { signed: true });
  if (!raw) return undefined;
  try {
    const step = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as FinishedStep;
    return ['signed_in', 'allowed', 'denied'].includes(step.outcome) && typeof step.params?.client_id === 'string' ? step : undefined;
  } catch {
    return undefined;
  }
}

const DONE: Record<StepOutcome, (app: string) => string> = {
  signed_in: (app) => `You already signed in to continue to ${app}.`,
  allowed: (app) => `You already allowed ${app} to access your account.`,
  denied: (app) => `You already declined ${app}'s request. Nothing was shared with it.`,
};

/**
 * Shows "this step is finished" when this browser finished the step at this address; false when
 * it did not (then the caller's error stands). Continuing starts the same authorization again,
 * only while the app may still be authorized.
 */
export async function showFinishedStep(ctx: Context, provider: Provider): Promise<boolean> {
  const step = finishedStep(ctx);
  if (!step) return false;
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
  return true;
}
