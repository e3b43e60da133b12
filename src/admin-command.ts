// How an operator types the scripts (package.json "admin"): named in the usage line, in the pages
// and in the demo's reminders. A leaf module, so that the CLI loads nothing of the server for it.
export const ADMIN_COMMAND = 'npm run --silent admin --';
