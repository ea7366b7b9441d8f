// Restart on save: a recursive fs.watch of the agent directory, filtered by the rules deploy and
// sync use (.agentctlignore, plus .git/ and node_modules/), debounced so one save (or an editor's
// write-rename dance) is one restart.
import { type FSWatcher, watch } from 'node:fs';
import { IGNORE_FILE, loadIgnoreRules } from '../../sync/index.js';

/** Long enough to gather one save's events (an editor's write, rename and chmod come within milliseconds). */
export const DEBOUNCE_MS = 10;

type Rules = Awaited<ReturnType<typeof loadIgnoreRules>>;

/** Whether a changed path (relative, `/`-separated) is one deploy would upload. */
export function watched(rules: Rules, relPath: string): boolean {
  const parts = relPath.split('/').filter(Boolean);
  for (let i = 1; i < parts.length; i++) if (rules.ignores(parts.slice(0, i).join('/'), true)) return false;
  return parts.length > 0 && !rules.ignores(parts.join('/'), false);
}

/** Calls `onChange` with the changed paths, at most once per quiet `debounceMs`; returns the stop function. */
export async function watchTree(root: string, onChange: (paths: string[]) => void, debounceMs = DEBOUNCE_MS): Promise<() => void> {
  let rules = await loadIgnoreRules(root);
  const changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const watcher: FSWatcher = watch(root, { recursive: true }, (_kind, filename) => {
    if (!filename) return;
    const rel = filename
      .toString()
      .split(/[\\/]+/)
      .join('/');
    if (rel === IGNORE_FILE) void loadIgnoreRules(root).then((fresh) => (rules = fresh));
    if (!watched(rules, rel)) return;
    changed.add(rel);
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      const paths = [...changed];
      changed.clear();
      onChange(paths);
    }, debounceMs);
  });
  watcher.on('error', () => {});
  return () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
}
