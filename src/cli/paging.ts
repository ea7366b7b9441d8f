import type { CommandContext } from './context.js';
import type { OptionsOf } from './command.js';
import type { all, limit, page } from './options.js';

/** The options of a paged list command: `--limit`, `--page`, `--all` (options.ts). */
type PagedOptions = OptionsOf<[ReturnType<typeof limit>, typeof page, typeof all]>;

/** One page of a paged list endpoint (`limit` + `page_number`, answering `{<key>: [...], total}`). */
export interface Page<T> {
  items: T[];
  total: number;
  /** The endpoint's JSON, for `--json`. */
  raw: unknown;
}

/**
 * A paged list as the command's options ask for it: `--page N` of `--limit` rows, or `--all` pages.
 * `--json` of `--all` is the first page's object with every row under `key` (and `total` kept).
 * When rows are left out, a terminal is told on stderr: "showing 2 of 5; --page 2 or --all".
 */
export async function listPaged<T>(
  ctx: CommandContext,
  options: PagedOptions,
  key: string,
  fetchPage: (page: number, limit: number) => Promise<Page<T>>,
): Promise<Page<T>> {
  const limit = options.limit;
  if (options.all) {
    const first = await fetchPage(1, limit);
    const items = [...first.items];
    // --json prints the rows as the server sent them, page after page.
    const rawRows = [...rowsOf(first.raw, key)];
    for (let page = 2; items.length < first.total; page++) {
      const next = await fetchPage(page, limit);
      if (next.items.length === 0) break;
      items.push(...next.items);
      rawRows.push(...rowsOf(next.raw, key));
    }
    return { items, total: first.total, raw: { ...(first.raw as Record<string, unknown>), [key]: rawRows } };
  }
  const page = options.page;
  const result = await fetchPage(page, limit);
  const shownTo = (page - 1) * limit + result.items.length;
  if (result.items.length > 0 && shownTo < result.total) {
    const shown = page === 1 ? `${result.items.length}` : `${(page - 1) * limit + 1}-${shownTo}`;
    noteCut(ctx, `showing ${shown} of ${result.total}; --page ${page + 1} or --all`);
  }
  return result;
}

/**
 * A list of the newest rows only (no pages: `versions list`): a terminal is told when rows are
 * left out and how many `--limit` can show ("showing 20 of 34; --limit 34").
 */
export function noteNewest(ctx: CommandContext, shown: number, total: number, max: number): void {
  if (shown > 0 && shown < total) noteCut(ctx, `showing ${shown} of ${total}; --limit ${Math.min(total, max)}${total > max ? ' (the most)' : ''}`);
}

/** The "rows were left out" line: stderr, and only for a person at a terminal. */
function noteCut(ctx: CommandContext, line: string): void {
  if (ctx.chatty && ctx.io.stderr.isTTY) ctx.info(line);
}

const rowsOf = (raw: unknown, key: string): unknown[] => {
  const rows = (raw as Record<string, unknown> | null)?.[key];
  return Array.isArray(rows) ? rows : [];
};
