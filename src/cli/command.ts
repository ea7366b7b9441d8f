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
  choices?: readonly string[];
  complete?: CompletionKind;
  /** The API field it fills, when not its own name (see OptionSpec.field). */
  field?: string | readonly string[];
}

/** What `--help`, completions and the lazy loader know of a command without loading it. */
export interface CommandDeclaration<A extends readonly ArgSpec[] = readonly ArgSpec[], O extends readonly OptionSpec[] = readonly OptionSpec[]> {
  /** `['tasks', 'migrate']`, or a single word for top-level commands (`['deploy']`). */
  path: readonly string[];
  summary: string;
  /** Longer help text, when the summary is not enough. */
  description?: string;
  args?: A;
  options?: O;
  /** Shown under `Examples:` in `--help`; at least one per command. */
  examples: readonly string[];
  /** What to run next after a 404 from this command. */
  notFoundNext?: string;
  /**
   * Other words for the verb, beside VERB_ALIASES' `ls` and `rm` of `list` and `delete`: a noun whose
   * removal is not called delete takes `rm` here (`keys revoke`).
   */
  aliases?: readonly string[];
}

// ---- option and argument types, read off the declarations ------------------------------------

type Camel<S extends string> = S extends `${infer Head}-${infer Tail}` ? `${Head}${Capitalize<Camel<Tail>>}` : S;
type LongFlag<F extends string> = F extends `${string}--${infer Rest}` ? (Rest extends `${infer Name} ${string}` ? Name : Rest) : never;
/** Commander's key for a flag: `--dry-run` is `dryRun`, `--no-sticky` is `sticky`. */
type OptionKey<F extends string> = LongFlag<F> extends `no-${infer Name}` ? Camel<Name> : Camel<LongFlag<F>>;
type OptionValue<O extends OptionSpec> = O extends { repeatable: true }
  ? string[]
  : O extends { integer: true }
    ? number
    : O extends { choices: readonly string[] }
      ? O['choices'][number]
      : O['flags'] extends `${string}<${string}>`
        ? string
        : boolean;

/** The parsed options of a command: one key per flag, typed by its declaration; set when it has a default. */
export type OptionsOf<O extends readonly OptionSpec[]> = {
  [S in O[number] as OptionKey<S['flags']>]: S extends { default: string | number | boolean } ? OptionValue<S> : OptionValue<S> | undefined;
};

type ArgValue<A extends ArgSpec> = A extends { choices: readonly string[] } ? A['choices'][number] : string;
/** The positional arguments, in order: a required one is always there. */
export type ArgsOf<A extends readonly ArgSpec[]> = { -readonly [I in keyof A]: A[I] extends { required: true } ? ArgValue<A[I]> : ArgValue<A[I]> | undefined };

export type Handler<A extends readonly ArgSpec[] = readonly ArgSpec[], O extends readonly OptionSpec[] = readonly OptionSpec[]> = (
  ctx: CommandContext,
  args: ArgsOf<A>,
  options: OptionsOf<O>,
) => Promise<Outcome>;

/** A command module's default export: its declaration and its handler, side by side. */
export interface CommandDefinition<A extends readonly ArgSpec[] = readonly ArgSpec[], O extends readonly OptionSpec[] = readonly OptionSpec[]>
  extends CommandDeclaration<A, O> {
  handler: Handler<A, O>;
}

/**
 * Declares a command in its own module (`commands/<noun>/<verb>.ts`): arguments, options, help,
 * examples and the handler, whose `args` and `options` are typed from the declarations.
 * `npm run build` collects the declarations into `manifest.ts`, which start-up reads instead of
 * loading every command.
 */
export function defineCommand<const A extends readonly ArgSpec[] = [], const O extends readonly OptionSpec[] = []>(
  command: CommandDefinition<A, O>,
): CommandDefinition {
  return command as unknown as CommandDefinition;
}

/** An entry of the generated manifest: a declaration and how to load the module that handles it. */
export interface CommandEntry extends CommandDeclaration {
  load: () => Promise<{ default: CommandDefinition }>;
}

const snake = (name: string) => name.replace(/-/g, '_');

/**
 * Which flag (or `<argument>`) of the command fills each API field, from its declarations: a
 * declared `field`, else the flag's own name in snake_case (`--include-retired`: include_retired).
 */
export function flagsByField(spec: Pick<CommandDeclaration, 'options' | 'args'>): Map<string, string> {
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
