// Typed errors of our artifact adapters, so that others recognise them without reading messages.
import { errors } from 'oidc-provider';

/**
 * A code or refresh token consumed by a concurrent request in the meantime: the adapters consume
 * atomically, and the loser of the race gets this (an invalid_grant to the client). Typed, so the
 * audit trail recognises a replay without reading messages.
 */
export class ArtifactAlreadyConsumed extends errors.InvalidGrant {
  readonly model: string;
  constructor(model: string) {
    super(`${model} already consumed`);
    this.model = model;
  }
}

/**
 * A pushed authorization request (RFC 9126) spent by a concurrent authorization in the meantime:
 * its request_uri works once, and the loser is refused as the provider refuses a spent one.
 */
export class RequestUriAlreadyUsed extends errors.InvalidRequestUri {
  constructor() {
    super('request_uri is invalid, expired, or was already used');
  }
}

/** The refusal of a consume that lost its race: the model's own error. */
export const alreadyConsumed = (model: string): Error => (model === 'PushedAuthorizationRequest' ? new RequestUriAlreadyUsed() : new ArtifactAlreadyConsumed(model));
