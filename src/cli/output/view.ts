import type { CellFormat } from './format.js';

// biome-ignore lint/suspicious/noExplicitAny: a column reads any row type its table is given
export interface Column<T = any> {
  header: string;
  value: (row: T) => unknown;
  format?: CellFormat;
  /** Shown only with `--wide`: the ids behind the names the other columns show. */
  wide?: boolean;
}

/** A record's line: label, value, format; `wide: true` shows it only with `--wide`. */
export type RecordField = [label: string, value: unknown, format?: CellFormat, show?: 'wide'];

/** How a command's result reads for a person or a pipe; `--json` prints the server's object instead. */
export type View =
  /** `title`: a heading above the table on a terminal (pipes get the rows only). */
  | { kind: 'table'; columns: Column[]; rows: unknown[]; empty: string; title?: string }
  | { kind: 'record'; fields: RecordField[] }
  | { kind: 'text'; text: string };

export const table = <T>(columns: Column<T>[], rows: T[], empty: string, title?: string): View => ({
  kind: 'table',
  columns,
  rows,
  empty,
  ...(title ? { title } : {}),
});
export const record = (fields: RecordField[]): View => ({ kind: 'record', fields });
export const text = (value: string): View => ({ kind: 'text', text: value });
