// Server-rendered pages (ejs). Every value is escaped by `<%= %>`; views never use `<%-` on input.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ejs from 'ejs';
import { formatDate } from './dates.ts';

export const VIEWS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../views');

export function renderPage(name: string, data: Record<string, unknown>): Promise<string> {
  return ejs.renderFile(path.join(VIEWS_DIR, `${name}.ejs`), { title: '', user: undefined, flash: undefined, csrf: '', formatDate, ...data }, { async: false, cache: process.env.NODE_ENV === 'production' });
}
