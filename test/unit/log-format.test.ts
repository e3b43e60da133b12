// Issue 38 point 6: readable lines in development, JSON in production (and tests); request lines
// at debug only in development; LOG_FORMAT chooses either way, and a bad value stops the start.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const KEYS = { COOKIE_KEYS: 'k'.repeat(32), DATA_ENCRYPTION_KEYS: 'd'.repeat(32), DATABASE_URL: 'postgres://x@127.0.0.1/x' };

describe('LOG_FORMAT and the request lines', () => {
  it('defaults: pretty + debug request lines in development; json + info elsewhere', () => {
    expect(loadConfig({})).toMatchObject({ logFormat: 'pretty', requestLogLevel: 'debug' });
    expect(loadConfig({ NODE_ENV: 'production', ...KEYS })).toMatchObject({ logFormat: 'json', requestLogLevel: 'info' });
    expect(loadConfig({ NODE_ENV: 'test' })).toMatchObject({ logFormat: 'json', requestLogLevel: 'info' });
  });

  it('LOG_FORMAT overrides; anything else is a configuration error naming it', () => {
    expect(loadConfig({ LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(loadConfig({ NODE_ENV: 'production', LOG_FORMAT: 'pretty', ...KEYS }).logFormat).toBe('pretty');
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(ConfigError);
    expect(() => loadConfig({ LOG_FORMAT: 'xml' })).toThrow(/LOG_FORMAT must be one of json, pretty/);
  });
});
