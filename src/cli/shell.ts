/**
 * Commands printed for people to paste (hints, undo lines, next steps): every argument quoted for
 * a POSIX shell only when it needs it, so `--params '{"n": 1}'` and paths with spaces paste as typed.
 */
const SAFE = /^[A-Za-z0-9_@%+=:,./-]+$/;

/** One argument, single-quoted unless it is plain. */
export function shellQuote(arg: string): string {
  if (arg !== '' && SAFE.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** A word for the reader to fill in (`<fs_id>`): printed as it is, never quoted. */
export interface Placeholder {
  placeholder: string;
}
export const placeholder = (name: string): Placeholder => ({ placeholder: `<${name}>` });

export type ShellWord = string | number | Placeholder | false | null | undefined;

/** A command line from its words; `false`, `undefined` and `null` words are left out (optional flags). */
export function shellCommand(...words: ShellWord[]): string {
  return words
    .filter((word): word is string | number | Placeholder => word !== false && word !== undefined && word !== null)
    .map((word) => (typeof word === 'object' ? word.placeholder : shellQuote(String(word))))
    .join(' ');
}

/** `agentctl <words>`: the way every hint names a command. */
export const agentctl = (...words: ShellWord[]) => shellCommand('agentctl', ...words);
