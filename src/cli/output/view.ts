import type { CellFormat } from './format.js';

export interface Column<T = any> {
  header: string;
  value: (row: T) => unknown;
  format?: CellFormat;
}

/** How a command's result reads for a person or a pipe; `--json` prints the server's object instead. */
export type View =
  | { kind: 'table'; columns: Column[]; rows: unknown[]; empty: string }
  | { kind: 'record'; fields: [label: string, value: unknown, format?: CellFormat][] }
  | { kind: 'text'; text: string };

export const table = <T>(columns: Column<T>[], rows: T[], empty: string): View => ({ kind: 'table', columns, rows, empty });
export const record = (fields: [string, unknown, CellFormat?][]): View => ({ kind: 'record', fields });
export const text = (value: string): View => ({ kind: 'text', text: value });
