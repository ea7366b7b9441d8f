// `--json FIELDS` and `--jq EXPR` (README "The CLI", Global flags): what a script picks out of a
// command's JSON answer, as gh's flags of the same names do.
import type { CommandEntry } from './command.js';
import { CliError } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { GLOBAL_OPTIONS } from './registry.js';

/** `id,name,status`: field names, comma-separated (dots for nested fields are not taken). */
const FIELD_LIST = /^[a-z_][a-z0-9_]*(,[a-z_][a-z0-9_]*)*$/;

/**
 * Takes the FIELDS of `--json FIELDS` (or `--json=FIELDS`) out of the command line, leaving a bare
 * `--json`. `--json` takes no value of its own, so the word after it is FIELDS only when it cannot
 * be something else: a field list with a comma, or one field when the command's positional
 * arguments are all there without it (`tasks get T --json id`, not `tasks get --json T`).
 */
export function takeJsonFields(argv: readonly string[], spec: CommandEntry | undefined): { argv: string[]; fields?: string[] } {
  const out = [...argv];
  for (let i = 0; i < out.length; i++) {
    const word = out[i]!;
    if (word === '--') break;
    if (word.startsWith('--json=')) {
      const fields = word.slice('--json='.length);
      if (!FIELD_LIST.test(fields)) throw badFields(fields);
      out[i] = '--json';
      return { argv: out, fields: fields.split(',') };
    }
    if (word !== '--json') continue;
    const next = out[i + 1];
    if (next === undefined || !FIELD_LIST.test(next)) return { argv: out };
    if (next.includes(',') || (spec && positionalsWithout(out, i + 1, spec) >= (spec.args?.length ?? 0))) {
      out.splice(i + 1, 1);
      return { argv: out, fields: next.split(',') };
    }
    return { argv: out };
  }
  return { argv: out };
}

const badFields = (fields: string) =>
  new CliError(`--json ${fields}: not a list of field names`, {
    exitCode: ExitCode.usage,
    code: 'usage',
    hint: 'Name the fields comma-separated, e.g. --json id,name,status; bare --json prints every field.',
  });

/** How many positional arguments the command line gives the command, leaving out the word at `skip`. */
function positionalsWithout(argv: readonly string[], skip: number, spec: CommandEntry): number {
  const valueFlags = new Set(
    [...GLOBAL_OPTIONS, ...(spec.options ?? [])].filter((o) => /[<[]/.test(o.flags)).flatMap((o) => o.flags.match(/-{1,2}[a-zA-Z][\w-]*/g) ?? []),
  );
  let words = 0;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (i === skip) continue;
    if (word === '--') {
      words += argv.length - i - 1;
      break;
    }
    if (word.startsWith('-')) {
      if (valueFlags.has(word)) i++;
      continue;
    }
    words++;
  }
  return Math.max(0, words - spec.path.length);
}

/**
 * The chosen fields of a command's JSON: of the record, or of every record of a list answer
 * (`{tasks: [...], total}` gives an array of the picked records, as gh prints them). A field the
 * answer lacks is an error naming the fields it has; the whole answer is then printed, so nothing a
 * command made (a key's secret) is lost to a typo.
 */
export function selectFields(json: unknown, fields: readonly string[]): { value: unknown; unknown?: CliError } {
  const list = listOf(json);
  const records = list ?? [json];
  if (!records.every(isRecord))
    return {
      value: json,
      unknown: new CliError('--json FIELDS needs an answer made of records; this one is not', {
        exitCode: ExitCode.usage,
        code: 'usage',
        hint: 'Use bare --json, or --jq.',
      }),
    };
  const available = [...new Set((records as Record<string, unknown>[]).flatMap((r) => Object.keys(r)))];
  const missing = fields.filter((f) => !available.includes(f));
  if (missing.length && records.length) {
    return {
      value: json,
      unknown: new CliError(`Unknown JSON field${missing.length === 1 ? '' : 's'}: ${missing.join(', ')}`, {
        exitCode: ExitCode.usage,
        code: 'unknown_field',
        hint: `Available fields: ${available.sort().join(', ')}`,
      }),
    };
  }
  const pick = (r: Record<string, unknown>) => Object.fromEntries(fields.map((f) => [f, r[f] ?? null]));
  return { value: list ? (list as Record<string, unknown>[]).map(pick) : pick(json as Record<string, unknown>) };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The records of a list answer: an array, or an object without an `id` (records have one) holding
 * one array of records beside counts and cursors (`{tasks: [...], total}`).
 */
function listOf(json: unknown): unknown[] | undefined {
  if (Array.isArray(json)) return json;
  if (!isRecord(json) || 'id' in json) return undefined;
  const values = Object.values(json);
  const arrays = values.filter((v): v is unknown[] => Array.isArray(v) && v.every(isRecord));
  return arrays.length === 1 && values.every((v) => v === arrays[0] || v === null || typeof v !== 'object') ? arrays[0] : undefined;
}

/**
 * `--jq EXPR` on the JSON: jq's own output, strings raw (as gh prints them). jq is a WebAssembly
 * build (jq-wasm) loaded only here, so no other run pays for it.
 */
export async function runJq(json: unknown, expression: string): Promise<string> {
  const { raw } = await import('jq-wasm');
  try {
    const output = await raw(JSON.stringify(json ?? null), expression, ['-r']);
    return output.endsWith('\n') || output === '' ? output : `${output}\n`;
  } catch (error) {
    const message = (error as Error).message.replace(/\s+$/, '').replace(/^jq: error(?: \(at [^)]*\))?: /, '');
    throw new CliError(`--jq: ${message}`, { exitCode: ExitCode.usage, code: 'jq_error', hint: 'See https://jqlang.org/manual for the language.' });
  }
}
