import type { CommandDeclaration, OptionSpec } from './command.js';
import { completionByName, type CompletionKind } from './complete.js';
import { aliasesOf, GLOBAL_OPTIONS, NOUNS, registry, VERB_ALIASES } from './registry.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Flag {
  short?: string;
  long: string;
  takesValue: boolean;
  description: string;
  choices?: readonly string[];
  complete?: CompletionKind;
}

function parseFlag(option: OptionSpec): Flag {
  const short = /(?:^|\s)-([a-zA-Z])\b/.exec(option.flags)?.[1];
  const long = /--([a-z][a-z0-9-]*)/.exec(option.flags)![1];
  const takesValue = /[<[]/.test(option.flags);
  return {
    short,
    long,
    takesValue,
    description: option.description,
    choices: option.choices,
    complete: option.complete ?? (takesValue && !option.choices ? completionByName(long) : undefined),
  };
}

/** The positional argument whose values a script can offer: fixed choices, or live ones (declared, or by its name). */
const positionalOf = (spec: CommandDeclaration) =>
  (spec.args ?? []).map((a) => (a.choices || a.complete ? a : { ...a, complete: completionByName(a.name) })).find((a) => a.choices || a.complete);

const HEADER = (shell: Shell) => `agentctl ${shell} completion: generated from the command registry by \`agentctl completion ${shell}\`; do not edit`;

interface Model {
  topLevel: { name: string; description: string }[];
  verbs: Map<string, { name: string; description: string; aliases: string[] }[]>;
  commands: { key: string; spec: CommandDeclaration; flags: Flag[] }[];
  globals: Flag[];
}

function model(): Model {
  const topLevel: Model['topLevel'] = [];
  const verbs: Model['verbs'] = new Map();
  for (const spec of registry) {
    const [first, second] = spec.path;
    if (!second) topLevel.push({ name: first, description: spec.summary });
    else {
      if (!verbs.has(first)) {
        verbs.set(first, []);
        topLevel.push({ name: first, description: NOUNS[first] ?? first });
      }
      verbs.get(first)!.push({ name: second, description: spec.summary, aliases: aliasesOf(spec) });
    }
  }
  return {
    topLevel,
    verbs,
    commands: registry.map((spec) => ({ key: spec.path.join(' '), spec, flags: (spec.options ?? []).map(parseFlag) })),
    globals: GLOBAL_OPTIONS.map(parseFlag),
  };
}

const quote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const names = (flags: Flag[]) => flags.flatMap((f) => [`--${f.long}`, ...(f.short ? [`-${f.short}`] : [])]);

/** The completion script for one shell, built from the registry (what `completions/` holds). */
export function completionScript(shell: Shell): string {
  const m = model();
  switch (shell) {
    case 'bash':
      return bash(m);
    case 'zsh':
      return zsh(m);
    case 'fish':
      return fish(m);
  }
}

function valueFlags(m: Model): string[] {
  return [...new Set([...m.globals, ...m.commands.flatMap((c) => c.flags)].filter((f) => f.takesValue).flatMap((f) => names([f])))].sort();
}

/** `'keys rm') verb=revoke ;;` for the aliases a command declares itself (the shared ones follow). */
const ownAliasCases = () =>
  registry.flatMap((spec) => (spec.aliases ?? []).map((alias) => `${quote(`${spec.path[0]} ${alias}`)}) verb=${spec.path[1]} ;;`)).join(' ');

/** Shared by bash and zsh: finds the noun and verb among the words, skipping flag values (and noting --profile). */
const FIND_COMMAND = (valueFlagList: string[]) => `  local noun="" verb="" profile="" agent="" skip=0 i w
  for ((i = 1; i < cword; i++)); do
    w="\${words[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$w" in
      --profile) profile="\${words[i+1]}"; skip=1; continue ;;
      --agent|-a) agent="\${words[i+1]}"; skip=1; continue ;;
      ${valueFlagList.join('|')}) skip=1; continue ;;
      -*) continue ;;
    esac
    if [[ -z "$noun" ]]; then noun="$w"; elif [[ -z "$verb" ]]; then verb="$w"; fi
  done
  case "$noun $verb" in ${ownAliasCases()} esac
  case "$verb" in ${Object.entries(VERB_ALIASES)
    .map(([verb, alias]) => `${alias}) verb=${verb} ;;`)
    .join(' ')} esac`;

function bash(m: Model): string {
  const lines = [
    `# ${HEADER('bash')}`,
    '# Live values (profiles, agents, tasks, versions, branches) come from the hidden `agentctl __complete KIND`: quick, silent on errors.',
    '_agentctl_dynamic() { "$cmd" __complete "$1" ${profile:+--profile "$profile"} ${agent:+--agent "$agent"} 2>/dev/null; }',
    '_agentctl() {',
    '  local cur prev words cword',
    '  words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD',
    '  cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"',
    '  local cmd="${words[0]}"',
    FIND_COMMAND(valueFlags(m)),
  ];
  const key = '"$noun${verb:+ $verb}"';
  const values = (f: Flag) =>
    f.choices ? `$(compgen -W ${quote(f.choices.join(' '))} -- "$cur")` : `$(compgen -W "$(_agentctl_dynamic ${f.complete})" -- "$cur")`;
  // A flag's values, per command (the same flag may take different values elsewhere).
  lines.push(`  case ${key} in`);
  for (const c of m.commands) {
    const withValues = c.flags.filter((f) => f.choices || f.complete);
    if (!withValues.length) continue;
    lines.push(`    ${quote(c.key)})`, `      case "$prev" in`);
    for (const f of withValues) lines.push(`        ${names([f]).join('|')}) COMPREPLY=(${values(f)}); return ;;`);
    lines.push(`      esac ;;`);
  }
  lines.push(`  esac`);
  lines.push(`  case "$prev" in`);
  for (const f of m.globals.filter((g) => g.choices || g.complete)) lines.push(`    ${names([f]).join('|')}) COMPREPLY=(${values(f)}); return ;;`);
  lines.push(`  esac`);
  lines.push(`  local globals=${quote(names(m.globals).join(' '))}`);
  lines.push(`  if [[ -z "$noun" ]]; then COMPREPLY=($(compgen -W "${m.topLevel.map((t) => t.name).join(' ')} $globals" -- "$cur")); return; fi`);
  lines.push(`  case "$noun" in`);
  for (const [noun, vs] of m.verbs)
    lines.push(`    ${noun}) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W ${quote(vs.map((v) => v.name).join(' '))} -- "$cur")); return; fi ;;`);
  lines.push(`  esac`);
  lines.push(`  case ${key} in`);
  for (const c of m.commands) {
    const positional = positionalOf(c.spec);
    const words = [...names(c.flags), ...(positional?.choices ?? [])].join(' ');
    const flagsOrChoices = `COMPREPLY=($(compgen -W "${words} $globals" -- "$cur"))`;
    // Live values are fetched only when a value, not a flag, is being typed.
    if (positional?.complete)
      lines.push(
        `    ${quote(c.key)}) if [[ "$cur" == -* ]]; then ${flagsOrChoices}; else COMPREPLY=($(compgen -W "$(_agentctl_dynamic ${positional.complete})" -- "$cur")); fi ;;`,
      );
    else lines.push(`    ${quote(c.key)}) ${flagsOrChoices} ;;`);
  }
  lines.push(`  esac`, '}', 'complete -o default -F _agentctl agentctl', '');
  return lines.join('\n');
}

const zshEscape = (text: string) => text.replace(/\\/g, '\\\\').replace(/'/g, `'\\''`).replace(/:/g, '\\:').replace(/\[/g, '\\[').replace(/\]/g, '\\]');

function zsh(m: Model): string {
  const described = (items: { name: string; description: string }[]) => items.map((i) => `'${i.name}:${zshEscape(i.description)}'`).join(' ');
  const action = (f: Flag) => (f.choices ? `(${f.choices.join(' ')})` : f.complete ? `_agentctl_dynamic ${f.complete}` : '');
  const flagSpecs = (flags: Flag[]) =>
    flags.flatMap((f) => names([f]).map((n) => `'${n}[${zshEscape(f.description)}]${f.takesValue ? `:value:${action(f)}` : ''}'`)).join(' \\\n        ');
  const lines = [
    '#compdef agentctl',
    `# ${HEADER('zsh')}`,
    '# Live values (profiles, agents, tasks, versions, branches) come from the hidden `agentctl __complete KIND`: quick, silent on errors.',
    '# _arguments calls an action with its compadd options first: the kind is the last word.',
    '_agentctl_dynamic() { local -a items; items=(${(f)"$("$agentctl_cmd" __complete "${@[-1]}" ${profile:+--profile "$profile"} ${agent:+--agent "$agent"} 2>/dev/null)"}); compadd "${@[1,-2]}" -a items; }',
    '_agentctl() {',
    '  local cword=$((CURRENT - 1)) agentctl_cmd="${words[1]}"',
    FIND_COMMAND(valueFlags(m)).replace('for ((i = 1; i < cword; i++))', 'for ((i = 2; i <= cword; i++))'),
    `  local -a globals; globals=(${flagSpecs(m.globals)})`,
    `  if [[ -z "$noun" ]]; then`,
    // After a global flag that takes a value, only that value: not the commands too.
    `    case "\${words[CURRENT-1]}" in ${names(m.globals.filter((g) => g.takesValue)).join('|')}) _arguments -s $globals; return ;; esac`,
    `    local -a commands; commands=(${described(m.topLevel)})`,
    `    _describe -t commands 'agentctl command' commands; _arguments -s $globals; return`,
    `  fi`,
    `  case "$noun" in`,
  ];
  for (const [noun, vs] of m.verbs)
    lines.push(`    ${noun}) if [[ -z "$verb" ]]; then local -a verbs; verbs=(${described(vs)}); _describe -t verbs '${noun} command' verbs; return; fi ;;`);
  lines.push(`  esac`, `  case "$noun\${verb:+ $verb}" in`);
  for (const c of m.commands) {
    const positional = positionalOf(c.spec);
    const positionalAction = positional?.choices ? `(${positional.choices.join(' ')})` : `_agentctl_dynamic ${positional?.complete}`;
    // The noun and verb are positional words to _arguments too: without a rest spec it completes
    // nothing at all, flag values included. (It also refuses an empty spec: none when no flags.)
    const specs = [flagSpecs(c.flags), positional ? `'*:${positional.name}:${positionalAction}'` : `'*: :'`].filter(Boolean);
    lines.push(`    ${quote(c.key)}) _arguments -s $globals${specs.map((spec) => ` \\\n        ${spec}`).join('')} ;;`);
  }
  // Autoloaded from $fpath, this file is _agentctl's body: define, then complete; sourced, register.
  lines.push(`  esac`, '}', 'if [[ "$funcstack[1]" == _agentctl ]]; then _agentctl "$@"; else compdef _agentctl agentctl; fi', '');
  return lines.join('\n');
}

function fish(m: Model): string {
  const lines = [
    `# ${HEADER('fish')}`,
    '# Live values (profiles, agents, tasks, versions, branches) come from the hidden `agentctl __complete KIND`: quick, silent on errors.',
    'function __agentctl_dynamic',
    '    set -l tokens (commandline -opc)',
    '    set -l previous',
    '    set -l profile',
    '    set -l agent',
    '    for token in $tokens',
    '        test "$previous" = --profile; and set profile --profile $token',
    '        contains -- "$previous" --agent -a; and set agent --agent $token',
    '        set previous $token',
    '    end',
    '    $tokens[1] __complete $argv[1] $profile $agent 2>/dev/null',
    'end',
    'complete -c agentctl -f',
  ];
  const values = (f: Flag) =>
    f.choices ? ` -x -a ${quote(f.choices.join(' '))}` : f.complete ? ` -x -a ${quote(`(__agentctl_dynamic ${f.complete})`)}` : ' -r';
  const flagLine = (condition: string, f: Flag) =>
    `complete -c agentctl${condition ? ` -n ${quote(condition)}` : ''} -l ${f.long}${f.short ? ` -s ${f.short}` : ''}${f.takesValue ? values(f) : ''} -d ${quote(f.description)}`;
  for (const f of m.globals) lines.push(flagLine('', f));
  for (const t of m.topLevel) lines.push(`complete -c agentctl -n '__fish_use_subcommand' -a ${t.name} -d ${quote(t.description)}`);
  for (const [noun, vs] of m.verbs) {
    const verbNames = vs.flatMap((v) => [v.name, ...v.aliases]).join(' ');
    for (const v of vs)
      lines.push(
        `complete -c agentctl -n ${quote(`__fish_seen_subcommand_from ${noun}; and not __fish_seen_subcommand_from ${verbNames}`)} -a ${v.name} -d ${quote(v.description)}`,
      );
  }
  for (const c of m.commands) {
    const [noun, verb] = c.spec.path;
    const verbWords = verb ? [verb, ...aliasesOf(c.spec)].join(' ') : '';
    const condition = verb ? `__fish_seen_subcommand_from ${noun}; and __fish_seen_subcommand_from ${verbWords}` : `__fish_seen_subcommand_from ${noun}`;
    for (const f of c.flags) lines.push(flagLine(condition, f));
    const positional = positionalOf(c.spec);
    if (positional)
      lines.push(
        `complete -c agentctl -n ${quote(condition)} -a ${quote(positional.choices ? positional.choices.join(' ') : `(__agentctl_dynamic ${positional.complete})`)}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
