// Every router of the app matches paths exactly as written: case-sensitive, and a trailing slash
// is another path. A path has one spelling; any other spelling is a 404 before a guard or a
// handler runs (the provider mount applies the same rule: src/oauth/mount.ts).
import Router from '@koa/router';

export function newRouter(): Router {
  return new Router({ sensitive: true, strict: true });
}
