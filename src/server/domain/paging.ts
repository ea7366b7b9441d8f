/** The list query every paged endpoint takes (README "HTTP conventions": `limit`, 1-based `page_number`). */
export interface PageInput {
  limit: number;
  page_number: number;
  order_direction: 'asc' | 'desc';
}

/** Offset of the first row of the requested page. */
export const pageOffset = (page: PageInput) => (page.page_number - 1) * page.limit;

/** One page of an already filtered and ordered list, with the count of the whole list. */
export function pageOf<T>(rows: T[], page: PageInput): { items: T[]; total: number } {
  const start = pageOffset(page);
  return { items: rows.slice(start, start + page.limit), total: rows.length };
}
