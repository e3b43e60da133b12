// Structured JSON logs. Only paths are logged, never query strings, bodies or headers, which can
// carry codes, tokens, secrets and passwords.
import pino from 'pino';

export type Logger = pino.Logger;

export function createLogger(level: string): Logger {
  return pino({ level, base: undefined, redact: ['req.headers.authorization', 'req.headers.cookie'] });
}
