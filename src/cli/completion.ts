import type { CommandSpec, OptionSpec } from './command.js';
import { GLOBAL_OPTIONS, NOUNS, registry } from './registry.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

interface Flag {
  short?: string;
  long: string;
  takesValue: boolean;
  description: string;
  choices?: readonly string[];
}

function parseFlag(option: OptionSpec): Flag {
  const short = /(?:^|\s)-([a-zA-Z])\b/.exec(option.flags)?.[1];
  const long = /--([a-z][a-z0-9-]*)/.exec(option.flags)![1];
  return { short, long, takesValue: /[<[]/.test(option.flags), description: option.description, choices: option.choices };
}

const HEADER = (shell: Shell) => `agentctl ${shell} completion: generated from the command registry by \`agentctl completion ${shell}\`; do not edit`;

interface Model {
  topLevel: { name: string; description: string }[];
  verbs: Map<string, { name: string; description: string }[]>;
  commands: { key: string; spec: CommandSpec; flags: Flag[] }[];
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
      verbs.get(first)!.push({ name: second, description: spec.summary });
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

/** Shared by bash and zsh: finds the noun and verb among the words, skipping flag values. */
const FIND_COMMAND = (valueFlagList: string[]) => `  local noun="" verb="" skip=0 i w
  for ((i = 1; i < cword; i++)); do
    w="\${words[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$w" in
      ${valueFlagList.join('|')}) skip=1; continue ;;
      -*) continue ;;
    esac
    if [[ -z "$noun" ]]; then noun="$w"; elif [[ -z "$verb" ]]; then verb="$w"; fi
  done`;

function bash(m: Model): string {
  const lines = [`# ${HEADER('bash')}`, '_agentctl() {', '  local cur prev words cword', '  words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD', '  cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"', FIND_COMMAND(valueFlags(m))];
  const key = '"$noun${verb:+ $verb}"';
  // A flag's fixed choices, per command (the same flag may take different values elsewhere).
  lines.push(`  case ${key} in`);
  for (const c of m.commands) {
    const withChoices = c.flags.filter((f) => f.choices);
    if (!withChoices.length) continue;
    lines.push(`    ${quote(c.key)})`, `      case "$prev" in`);
    for (const f of withChoices) lines.push(`        ${names([f]).join('|')}) COMPREPLY=($(compgen -W ${quote(f.choices!.join(' '))} -- "$cur")); return ;;`);
    lines.push(`      esac ;;`);
  }
  lines.push(`  esac`);
  lines.push(`  local globals=${quote(names(m.globals).join(' '))}`);
  lines.push(`  if [[ -z "$noun" ]]; then COMPREPLY=($(compgen -W "${m.topLevel.map((t) => t.name).join(' ')} $globals" -- "$cur")); return; fi`);
  lines.push(`  case "$noun" in`);
  for (const [noun, vs] of m.verbs) lines.push(`    ${noun}) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W ${quote(vs.map((v) => v.name).join(' '))} -- "$cur")); return; fi ;;`);
  lines.push(`  esac`);
  lines.push(`  case ${key} in`);
  for (const c of m.commands) {
    const positional = (c.spec.args ?? []).find((a) => a.choices);
    const words = [...names(c.flags), ...(positional ? positional.choices! : [])].join(' ');
    lines.push(`    ${quote(c.key)}) COMPREPLY=($(compgen -W "${words} $globals" -- "$cur")) ;;`);
  }
  lines.push(`  esac`, '}', 'complete -o default -F _agentctl agentctl', '');
  return lines.join('\n');
}

const zshEscape = (text: string) => text.replace(/\\/g, '\\\\').replace(/'/g, `'\\''`).replace(/:/g, '\\:').replace(/\[/g, '\\[').replace(/\]/g, '\\]');

function zsh(m: Model): string {
  const described = (items: { name: string; description: string }[]) => items.map((i) => `'${i.name}:${zshEscape(i.description)}'`).join(' ');
  const flagSpecs = (flags: Flag[]) =>
    flags.flatMap((f) => names([f]).map((n) => `'${n}[${zshEscape(f.description)}]${f.takesValue ? `:value:${f.choices ? `(${f.choices.join(' ')})` : ''}` : ''}'`)).join(' \\\n        ');
  const lines = [
    '#compdef agentctl',
    `# ${HEADER('zsh')}`,
    '_agentctl() {',
    '  local cword=$((CURRENT - 1))',
    FIND_COMMAND(valueFlags(m)).replace('for ((i = 1; i < cword; i++))', 'for ((i = 2; i <= cword; i++))'),
    `  local -a globals; globals=(${flagSpecs(m.globals)})`,
    `  if [[ -z "$noun" ]]; then`,
    `    local -a commands; commands=(${described(m.topLevel)})`,
    `    _describe -t commands 'agentctl command' commands; _arguments -s $globals; return`,
    `  fi`,
    `  case "$noun" in`,
  ];
  for (const [noun, vs] of m.verbs) lines.push(`    ${noun}) if [[ -z "$verb" ]]; then local -a verbs; verbs=(${described(vs)}); _describe -t verbs '${noun} command' verbs; return; fi ;;`);
  lines.push(`  esac`, `  case "$noun\${verb:+ $verb}" in`);
  for (const c of m.commands) {
    const positional = (c.spec.args ?? []).find((a) => a.choices);
    lines.push(`    ${quote(c.key)}) _arguments -s $globals \\\n        ${flagSpecs(c.flags) || "''"}${positional ? ` \\\n        '*:${positional.name}:(${positional.choices!.join(' ')})'` : ''} ;;`);
  }
  lines.push(`  esac`, '}', 'compdef _agentctl agentctl', '');
  return lines.join('\n');
}

function fish(m: Model): string {
  const lines = [`# ${HEADER('fish')}`, 'complete -c agentctl -f'];
  const flagLine = (condition: string, f: Flag) =>
    `complete -c agentctl${condition ? ` -n ${quote(condition)}` : ''} -l ${f.long}${f.short ? ` -s ${f.short}` : ''}${f.takesValue ? (f.choices ? ` -x -a ${quote(f.choices.join(' '))}` : ' -r') : ''} -d ${quote(f.description)}`;
  for (const f of m.globals) lines.push(flagLine('', f));
  for (const t of m.topLevel) lines.push(`complete -c agentctl -n '__fish_use_subcommand' -a ${t.name} -d ${quote(t.description)}`);
  for (const [noun, vs] of m.verbs) {
    const verbNames = vs.map((v) => v.name).join(' ');
    for (const v of vs) lines.push(`complete -c agentctl -n ${quote(`__fish_seen_subcommand_from ${noun}; and not __fish_seen_subcommand_from ${verbNames}`)} -a ${v.name} -d ${quote(v.description)}`);
  }
  for (const c of m.commands) {
    const [noun, verb] = c.spec.path;
    const condition = verb ? `__fish_seen_subcommand_from ${noun}; and __fish_seen_subcommand_from ${verb}` : `__fish_seen_subcommand_from ${noun}`;
    for (const f of c.flags) lines.push(flagLine(condition, f));
    const positional = (c.spec.args ?? []).find((a) => a.choices);
    if (positional) lines.push(`complete -c agentctl -n ${quote(condition)} -a ${quote(positional.choices!.join(' '))}`);
  }
  return lines.join('\n') + '\n';
}
