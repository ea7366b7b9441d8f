import type { OptionSpec } from './command.js';
import { boundsText, PAGE_LIMIT, type Bounds } from '../contract/enums.js';

// Options several commands declare alike. `as const` keeps each flag's literal text, from which
// a command's option types are read (command.ts OptionsOf).

export const agent = {
  flags: '-a, --agent <ns/name>',
  description: 'Agent as namespace/name (or an agt_ id)',
  complete: 'agents',
  field: ['agent', 'agent_id', 'agent_name', 'namespace'],
} as const satisfies OptionSpec;

/** `--limit`, its range and default the list endpoint's (src/contract/enums.ts). */
export const limit = (bounds: Required<Bounds> = PAGE_LIMIT) =>
  ({ flags: '--limit <n>', description: `How many to list (${boundsText(bounds)})`, integer: true, default: bounds.default }) as const satisfies OptionSpec;

export const page = { flags: '--page <n>', description: 'Page number, from 1', integer: true, default: 1, field: 'page_number' } as const satisfies OptionSpec;

export const all = { flags: '--all', description: 'Every page, --limit rows per request (--json keeps total)' } as const satisfies OptionSpec;

export const waitOptions = [
  { flags: '--timeout <seconds>', description: 'How long to wait for ACTIVE or FAILED', integer: true, default: 300 },
  { flags: '--detach', description: 'Return at once instead of waiting' },
] as const satisfies readonly OptionSpec[];
