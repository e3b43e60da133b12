// The release's semantic version, as package.json and CHANGELOG.md state it (GET /health reports it).
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
