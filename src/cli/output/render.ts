import type { ChalkInstance } from 'chalk';
import { humanCell, plainCell } from './format.js';
import type { View } from './view.js';

export interface RenderTarget {
  /** A terminal: tables and colour; otherwise tab-separated rows with ISO times. */
  tty: boolean;
  chalk: ChalkInstance;
  /** Terminal width, for wrapping long cells. */
  columns?: number;
  /** `--wide`: the columns and fields marked wide too. */
  wide?: boolean;
}

/** Renders a view to the text that goes to stdout (and a note for stderr when a list is empty). */
export async function renderView(shown: View, target: RenderTarget): Promise<{ stdout: string; note?: string }> {
  const view = target.wide ? shown : narrow(shown);
  switch (view.kind) {
    case 'text':
      return { stdout: view.text.endsWith('\n') || view.text === '' ? view.text : `${view.text}\n` };
    case 'record': {
      if (!target.tty) return { stdout: view.fields.map(([label, value, format]) => `${label}\t${plainCell(value, format ?? 'text')}\n`).join('') };
      const width = Math.max(...view.fields.map(([label]) => label.length));
      return {
        stdout: view.fields
          .map(([label, value, format]) => `${target.chalk.bold(label.padEnd(width))}  ${humanCell(value, format ?? 'text', target.chalk)}\n`)
          .join(''),
      };
    }
    case 'table': {
      if (view.rows.length === 0) return { stdout: '', note: view.empty };
      if (!target.tty) {
        return { stdout: view.rows.map((row) => `${view.columns.map((c) => plainCell(c.value(row), c.format ?? 'text')).join('\t')}\n`).join('') };
      }
      // Loaded only for a terminal: pipes and --json never pay for it.
      const { default: Table } = await import('cli-table3');
      const table = new Table({
        head: view.columns.map((c) => target.chalk.bold(c.header)),
        style: { head: [], border: [], compact: true },
        chars: {
          top: '',
          'top-mid': '',
          'top-left': '',
          'top-right': '',
          bottom: '',
          'bottom-mid': '',
          'bottom-left': '',
          'bottom-right': '',
          left: '',
          'left-mid': '',
          mid: '',
          'mid-mid': '',
          right: '',
          'right-mid': '',
          middle: '  ',
        },
      });
      for (const row of view.rows) table.push(view.columns.map((c) => humanCell(c.value(row), c.format ?? 'text', target.chalk)));
      const heading = view.title ? `${target.chalk.bold(view.title)}\n` : '';
      return {
        stdout: `${
          heading +
          table
            .toString()
            .split('\n')
            .map((line) => line.trimEnd())
            .join('\n')
        }\n`,
      };
    }
  }
}

/** The view without what only `--wide` shows. */
function narrow(view: View): View {
  if (view.kind === 'table') return { ...view, columns: view.columns.filter((c) => !c.wide) };
  if (view.kind === 'record') return { ...view, fields: view.fields.filter((f) => f[3] !== 'wide') };
  return view;
}
