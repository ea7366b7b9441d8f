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
}

export interface ArgSpec {
  name: string;
  description: string;
  required?: boolean;
  variadic?: boolean;
  choices?: readonly string[];
  complete?: CompletionKind;
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
