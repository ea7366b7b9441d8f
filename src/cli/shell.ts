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

/** A command line from its words; `false`, `undefined` and `null` words are left out (optional flags). */
export function shellCommand(...words: (string | number | false | null | undefined)[]): string {
  return words
    .filter((word): word is string | number => word !== false && word !== undefined && word !== null)
    .map((word) => shellQuote(String(word)))
    .join(' ');
}
