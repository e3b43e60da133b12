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
