import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { flagsByField, type CommandEntry, type OptionSpec, type Outcome } from './command.js';
import type { CliIO, GlobalOptions } from './context.js';
import { runJq, selectFields, takeJsonFields } from './json-fields.js';
import { CliError } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { aliasesOf, GLOBAL_OPTIONS, NOUNS, registry } from './registry.js';
import { VERSION } from './version.js';

export interface RunOptions {
  /** Aborted on Ctrl-C: commands stop waiting and the run ends with exit 130. */
  signal?: AbortSignal;
}

/** Builds the commander program from the registry; `onAction` runs when a command matches. */
export function buildProgram(
  io: CliIO,
  // biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
  onAction: (spec: CommandEntry, args: string[], options: Record<string, any>, globals: GlobalOptions) => Promise<void>,
  settings: { json?: boolean; argv?: readonly string[]; jsonFields?: string[] } = {},
): Command {
  const program = new Command('agentctl');
  program
    .description('Deploy agents, run and migrate tasks, and manage keys of an agentctl service')
    .version(VERSION, '-v, --version', 'Print the version')
    .helpOption('-h, --help', 'Show help')
    .exitOverride()
    // Under --json, commander's own usage errors are reported as {"error": ...} by run() instead.
    .configureOutput(
      settings.json
        ? { writeOut: (s) => io.stdout.write(s), writeErr: () => {}, outputError: () => {} }
        : { writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) },
    )
    .showSuggestionAfterError(true)
    // `help [command]` is commander's, not ours: `--help` is the one way, on every command.
    .helpCommand(false)
    .configureHelp({ showGlobalOptions: true })
    .addHelpText(
      'after',
      `\nExamples:\n  $ agentctl server start --detach\n  $ agentctl deploy --agent default/bot --image registry.local/bot:1\n  $ agentctl tasks migrate --from v1 --to-latest --yes --json\n\nRun agentctl <command> --help for a command's flags and examples.\n`,
    );
  for (const option of GLOBAL_OPTIONS) if (!/--(version|help)\b/.test(option.flags)) program.addOption(toOption(option));
  // An unknown first word that is a verb of some nouns (`agentctl status`) points at those commands.
  program.on('command:*', ([word]: string[]) => {
    const nouns = registry.filter((s) => s.path.length === 2 && (s.path[1] === word || aliasesOf(s).includes(word!))).map((s) => s.path[0]!);
    if (!nouns.length) return (program as unknown as { unknownCommand(): void }).unknownCommand();
    const suggestion = nouns.length <= 3 ? nouns.map((noun) => `agentctl ${noun} ${word}`).join(' or ') : `agentctl <noun> ${word} (${nouns.join(', ')})`;
    program.error(`error: '${word}' is not an agentctl command; did you mean ${suggestion}?`, { code: 'commander.unknownCommand' });
  });
  program.showHelpAfterError("Run 'agentctl --help' for the commands.");

  const parents = new Map<string, Command>();
  // Only the named command is built when the command line names one (its noun's other verbs when
  // the verb is unknown, for suggestions): the rest of the tree is for help, not to run `tasks list`.
  for (const spec of settings.argv ? wantedCommands(settings.argv) : registry) {
    let parent = program;
    if (spec.path.length === 2) {
      const [noun] = spec.path;
      let nounCommand = parents.get(noun);
      if (!nounCommand) {
        nounCommand = program
          .command(noun)
          .description(NOUNS[noun] ?? noun)
          .helpCommand(false)
          .showHelpAfterError(`Run 'agentctl ${noun} --help' for its commands.`);
        parents.set(noun, nounCommand);
      }
      parent = nounCommand;
    }
    const command = parent
      .command(spec.path[spec.path.length - 1])
      .description(spec.description ? `${spec.summary}\n\n${spec.description}` : spec.summary)
      .summary(spec.summary);
    for (const arg of spec.args ?? []) {
      const argument = command.createArgument(arg.required ? `<${arg.name}>` : `[${arg.name}]`, arg.description);
      if (arg.choices) argument.choices(arg.choices);
      command.addArgument(argument);
    }
    for (const option of spec.options ?? []) command.addOption(toOption(option));
    for (const alias of aliasesOf(spec)) command.alias(alias);
    command.addHelpText('after', `\nExamples:\n${spec.examples.map((e) => `  $ ${e}`).join('\n')}\n`);
    // A usage error (a missing argument, an unknown flag) shows how the command is called, not a bare line.
    const name = `agentctl ${spec.path.join(' ')}`;
    command.showHelpAfterError(`usage: ${name} ${command.usage()}\nRun '${name} --help' for its flags and examples.`);
    command.action(async (...received: unknown[]) => {
      const self = received[received.length - 1] as Command;
      // biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
      const globals = self.optsWithGlobals() as Record<string, any>;
      await onAction(spec, self.processedArgs.filter((a) => a !== undefined).map(String), self.opts(), {
        json: Boolean(globals.json) || globals.jq !== undefined,
        jsonFields: settings.jsonFields,
        jq: globals.jq,
        wide: Boolean(globals.wide),
        profile: globals.profile,
        baseUrl: globals.baseUrl,
        apiKey: globals.apiKey,
        color: globals.color !== false,
        quiet: Boolean(globals.quiet),
        debug: Boolean(globals.debug),
        nonInteractive: Boolean(globals.nonInteractive),
        yes: Boolean(globals.yes),
      });
    });
  }
  return program;
}

const GLOBAL_VALUE_FLAGS = new Set(['--profile', '--base-url', '--api-key', '--jq']);

/** The commands the command line can name: its first one or two words that are not flags or their values. */
export function wantedCommands(argv: readonly string[]): readonly CommandEntry[] {
  const words: string[] = [];
  for (let i = 0; i < argv.length && words.length < 2; i++) {
    const word = argv[i];
    if (GLOBAL_VALUE_FLAGS.has(word)) i++;
    else if (word === '--') break;
    else if (!word.startsWith('-')) words.push(word);
  }
  const [first, second] = words;
  const noun = registry.filter((s) => s.path[0] === first);
  if (!noun.length) return registry;
  const exact = noun.filter((s) => s.path.length === 1 || s.path[1] === second || aliasesOf(s).includes(second!));
  return exact.length === 1 ? exact : noun;
}

function toOption(spec: OptionSpec): Option {
  const option = new Option(spec.flags, spec.description);
  if (spec.choices) {
    const choices = spec.choices;
    option.choices(choices);
    // Any case: `--status running` is RUNNING; the handler sees the canonical value.
    option.argParser((value: string) => {
      const match = choices.find((choice) => choice.toLowerCase() === value.toLowerCase());
      if (match === undefined) throw new InvalidArgumentError(`Allowed choices are ${choices.join(', ')}.`);
      return match;
    });
  }
  if (spec.integer) {
    option.argParser((value: string) => {
      if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('Not an integer.');
      return Number(value);
    });
  }
  if (spec.repeatable) option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
  if (spec.default !== undefined) option.default(spec.default);
  return option;
}

/** Runs one command line in-process: returns the exit code; prints to `io` only. */
export async function run(commandLine: readonly string[], io: CliIO, options: RunOptions = {}): Promise<number> {
  const signal = options.signal ?? new AbortController().signal;
  let exitCode: number = ExitCode.ok;
  let parsedGlobals: GlobalOptions | undefined;
  let failedSpec: CommandEntry | undefined;
  let commandContext: import('./context.js').CommandContext | undefined;
  const named = wantedCommands(commandLine);
  let taken: ReturnType<typeof takeJsonFields>;
  try {
    taken = takeJsonFields(commandLine, named.length === 1 ? named[0] : undefined);
  } catch (error) {
    return reportFailure(error, io, undefined, undefined);
  }
  const { argv, fields: jsonFields } = taken;
  let jsonMode = argv.includes('--json') || argv.includes('--jq');
  const program = buildProgram(
    io,
    async (spec, args, opts, globals) => {
      parsedGlobals = globals;
      jsonMode = globals.json;
      failedSpec = spec;
      const { CommandContext } = await import('./context.js');
      const ctx = await CommandContext.create(io, globals, signal, spec.path);
      commandContext = ctx;
      const { default: command } = await spec.load();
      if (opts.agent === undefined && spec.options?.some((option) => option.flags.includes('--agent '))) {
        const { projectAgent } = await import('./project-file.js');
        opts.agent = await projectAgent(io.cwd);
      }
      // biome-ignore lint/suspicious/noExplicitAny: commander's parsed options are untyped
      const outcome: Outcome = await (command.handler as (ctx: unknown, args: string[], options: Record<string, any>) => Promise<Outcome>)(ctx, args, opts);
      await print(ctx, outcome);
      exitCode = outcome.exitCode ?? ExitCode.ok;
    },
    { json: jsonMode, argv, jsonFields },
  );
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return ExitCode.ok;
      if (error.code === 'commander.help' || error.code === 'commander.executeSubCommandAsync') return ExitCode.usage;
      if (jsonMode)
        io.stderr.write(
          `${JSON.stringify({ error: { code: 'usage', message: error.message.replace(/^error: /, ''), status: null, detail: null, hint: 'Run with --help for the flags.', trace_id: null } })}\n`,
        );
      return ExitCode.usage;
    }
    return reportFailure(error, io, parsedGlobals, failedSpec, commandContext?.trace?.traceId);
  }
}

async function print(ctx: import('./context.js').CommandContext, outcome: Outcome): Promise<void> {
  if (ctx.globals.json && outcome.json !== undefined) {
    // A typo in a field or the expression costs no data: the whole answer still goes to stdout.
    const whole = () => ctx.io.stdout.write(`${JSON.stringify(outcome.json, null, 2)}\n`);
    let value: unknown = outcome.json;
    if (ctx.globals.jsonFields) {
      const picked = selectFields(value, ctx.globals.jsonFields);
      if (picked.unknown) {
        whole();
        throw picked.unknown;
      }
      value = picked.value;
    }
    if (ctx.globals.jq !== undefined) {
      let output: string;
      try {
        output = await runJq(value, ctx.globals.jq);
      } catch (error) {
        whole();
        throw error;
      }
      ctx.io.stdout.write(output);
      return;
    }
    ctx.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
    return;
  }
  if (!outcome.view) return;
  const { renderView } = await import('./output/render.js');
  const rendered = await renderView(outcome.view, {
    tty: Boolean(ctx.io.stdout.isTTY),
    chalk: ctx.chalk,
    columns: ctx.io.stdout.columns,
    wide: ctx.globals.wide,
  });
  ctx.io.stdout.write(rendered.stdout);
  if (rendered.note && ctx.io.stderr.isTTY) ctx.info(rendered.note);
}

async function reportFailure(error: unknown, io: CliIO, globals: GlobalOptions | undefined, spec: CommandEntry | undefined, traceId?: string): Promise<number> {
  // Data first: a script still gets the record (e.g. the version a timed-out deploy created) on stdout.
  if (globals?.json && error instanceof CliError && error.json !== undefined) io.stdout.write(`${JSON.stringify(error.json, null, 2)}\n`);
  const { toFailure, formatFailure, jsonFailure } = await import('./output/failure.js');
  const { Chalk } = await import('chalk');
  const failure = toFailure(error, { commandPath: spec?.path, notFoundNext: spec?.notFoundNext, flags: spec ? flagsByField(spec) : undefined });
  // A command that reached the service: its trace id, to paste into `agentctl trace` or a tracing UI.
  if (traceId && error instanceof Error && 'status' in error) failure.traceId = traceId;
  if (globals?.json) io.stderr.write(jsonFailure(failure));
  else {
    const colour = globals?.color !== false && !io.env.NO_COLOR && Boolean(io.stderr.isTTY);
    io.stderr.write(formatFailure(failure, new Chalk({ level: colour ? 1 : 0 })));
    if (globals?.debug && error instanceof Error && error.stack && failure.code === 'error') io.stderr.write(`${error.stack}\n`);
  }
  return failure.exitCode;
}
