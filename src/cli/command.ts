import type { CompletionKind } from './complete.js';
import type { CommandContext } from './context.js';
import type { View } from './output/view.js';

/** What a command hands back: the entry point prints it and exits with `exitCode`. */
export interface Outcome {
  /** Printed as-is under `--json`: the server's object. */
  json?: unknown;
  /** Printed for people (table on a TTY) or pipes (tab-separated) without `--json`. */
  view?: View;
  exitCode?: number;
}

export type Options = Record<string, any>;

export type Handler = (ctx: CommandContext, args: string[], options: Options) => Promise<Outcome>;

export interface OptionSpec {
  /** Commander flags: `-a, --agent <ns/name>`, `--dry-run`, `--no-sticky`. */
  flags: string;
  description: string;
  default?: string | boolean | number;
  choices?: readonly string[];
  /** Collects every occurrence into an array (`--scope a --scope b`). */
  repeatable?: boolean;
  /** Parses the value as an integer (usage error otherwise). */
  integer?: boolean;
  /** Completion scripts offer live values for it through the hidden `agentctl __complete KIND`. */
  complete?: CompletionKind;
  /**
   * The API field(s) this flag fills, when not the flag's own name in snake_case (`--page` fills
   * `page_number`): a validation error on such a field is shown under the flag the user typed.
   */
  field?: string | readonly string[];
}

export interface ArgSpec {
  name: string;
  description: string;
  required?: boolean;
  variadic?: boolean;
  choices?: readonly string[];
  complete?: CompletionKind;
  /** The API field it fills, when not its own name (see OptionSpec.field). */
  field?: string | readonly string[];
}

/** One command of the registry: drives `--help`, completions and lazy loading of its handler. */
export interface CommandSpec {
  /** `['tasks', 'migrate']`, or a single word for top-level commands (`['deploy']`). */
  path: readonly string[];
  summary: string;
  /** Longer help text, when the summary is not enough. */
  description?: string;
  args?: readonly ArgSpec[];
  options?: readonly OptionSpec[];
  /** Shown under `Examples:` in `--help`; at least one per command. */
  examples: readonly string[];
  /** What to run next after a 404 from this command. */
  notFoundNext?: string;
  load: () => Promise<{ default: Handler }>;
}

const snake = (name: string) => name.replace(/-/g, '_');

/**
 * Which flag (or `<argument>`) of the command fills each API field, from its declarations: a
 * declared `field`, else the flag's own name in snake_case (`--include-retired`: include_retired).
 */
export function flagsByField(spec: Pick<CommandSpec, 'options' | 'args'>): Map<string, string> {
  const byField = new Map<string, string>();
  const add = (shown: string, own: string, field: string | readonly string[] | undefined) => {
    for (const name of field === undefined ? [own] : typeof field === 'string' ? [field] : field) if (!byField.has(name)) byField.set(name, shown);
  };
  for (const option of spec.options ?? []) {
    const long = /--(?:no-)?([a-z0-9-]+)/.exec(option.flags);
    if (long) add(`--${long[1]}`, snake(long[1]!), option.field);
  }
  for (const arg of spec.args ?? []) add(arg.name.toUpperCase(), snake(arg.name), arg.field);
  return byField;
}
