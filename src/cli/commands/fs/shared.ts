import type { FileManifest, Filesystem } from '../../../contract/filesystems.js';
import type { SyncProgress, SyncResult, SyncTransport } from '../../../sync/index.js';
import type { CommandContext } from '../../context.js';
import { CliError } from '../../errors.js';
import { ExitCode, exitCodeForStatus } from '../../exit-codes.js';
import { record, table, type Column, type View } from '../../output/view.js';
import { VERSION } from '../../version.js';
import { agentctl, placeholder } from '../../shell.js';
import { ARCHIVE_MISSING_HINT } from '../../output/failure.js';

export const filesystemColumns: Column<Filesystem>[] = [
  { header: 'ID', value: (f) => f.id },
  { header: 'PROJECT', value: (f) => f.project_id ?? '' },
  { header: 'FILES', value: (f) => f.files_count },
  { header: 'BYTES', value: (f) => f.size_bytes },
  { header: 'CHECKSUM', value: (f) => (f.archive_checksum ? f.archive_checksum.slice(0, 12) : '(empty)') },
  { header: 'UPDATED', value: (f) => f.updated_at, format: 'time' },
];

export const filesystemTable = (rows: Filesystem[]) => table(filesystemColumns, rows, 'No filesystems.');

export const manifestColumns: Column<FileManifest['files'][number]>[] = [
  { header: 'MODE', value: (e) => (e.type === 'dir' ? 'd' : e.type === 'symlink' ? 'l' : '-') + e.mode.toString(8).padStart(4, '0') },
  { header: 'SIZE', value: (e) => e.size },
  { header: 'PATH', value: (e) => (e.type === 'dir' ? `${e.path}/` : e.linkpath ? `${e.path} -> ${e.linkpath}` : e.path) },
];

/** The base URL and key the sync functions use, resolved like every other command's. */
export function syncTransport(ctx: CommandContext): SyncTransport {
  const credentials = ctx.credentials();
  if (!credentials.apiKey) {
    throw new CliError(`No API key for profile "${credentials.profile}"`, {
      exitCode: ExitCode.auth,
      code: 'no_api_key',
      hint: 'Log in, set AGENTCTL_API_KEY, or pass --api-key.',
      next: 'agentctl auth login',
    });
  }
  return { baseUrl: credentials.baseUrl, apiKey: credentials.apiKey, userAgent: `agentctl/${VERSION}` };
}

const units = ['B', 'KiB', 'MiB', 'GiB'];
export function formatBytes(n: number): string {
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${n} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** A one-line progress bar on stderr when it is a terminal (and not --json/--quiet); otherwise nothing. */
export function progressBar(ctx: CommandContext): { update(p: SyncProgress): void; done(): void } {
  if (!ctx.io.stderr.isTTY || !ctx.chatty) return { update() {}, done() {} };
  let last = 0;
  let drawn = false;
  let phase = '';
  return {
    update(p) {
      const now = Date.now();
      if (p.phase === phase && now - last < 80 && !(p.total && p.bytes >= p.total)) return;
      last = now;
      phase = p.phase;
      drawn = true;
      const width = 24;
      const bar = p.total ? '█'.repeat(Math.round((Math.min(p.bytes, p.total) / p.total) * width)).padEnd(width, '░') : '';
      const amount = p.total ? `${formatBytes(p.bytes)} / ${formatBytes(p.total)}` : formatBytes(p.bytes);
      ctx.io.stderr.write(`\r\x1b[2K${p.phase.padEnd(8)} ${bar} ${amount}`);
    },
    done() {
      if (drawn) ctx.io.stderr.write('\r\x1b[2K');
    },
  };
}

/** Sync failures as CLI errors: a stale base is exit 5 with what to do about it. */
export async function runSync(
  ctx: CommandContext,
  what: { fsId: string; dir: string; verb: 'push' | 'pull' },
  run: (onProgress: (p: SyncProgress) => void) => Promise<SyncResult>,
): Promise<SyncResult> {
  const { SyncConflictError, SyncHttpError } = await import('../../../sync/index.js');
  const bar = progressBar(ctx);
  try {
    return await run((p) => bar.update(p));
  } catch (error) {
    if (error instanceof SyncConflictError) {
      throw new CliError(`Push refused: filesystem ${what.fsId} changed since ${what.dir} was last synced with it`, {
        exitCode: ExitCode.conflict,
        code: error.code,
        hint: 'Pull it first (your local changes would be replaced: keep a copy), or push with --force to overwrite the remote content.',
        next: agentctl('fs', 'pull', what.dir, '--fs', what.fsId),
      });
    }
    if (error instanceof SyncHttpError) {
      throw new CliError(typeof error.detail === 'string' ? error.detail : error.message, {
        exitCode: exitCodeForStatus(error.status),
        code: error.code,
        ...(error.code === 'archive_missing'
          ? { hint: ARCHIVE_MISSING_HINT, next: agentctl('fs', 'push', placeholder('dir'), '--fs', what.fsId, '--force') }
          : {}),
      });
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_SOCKET') {
      throw new CliError(`Cannot reach ${ctx.credentials().baseUrl} (${code})`, {
        exitCode: ExitCode.unreachable,
        code: 'unreachable',
        hint: 'Is the server running? agentctl server status',
      });
    }
    throw error;
  } finally {
    bar.done();
  }
}

export const syncView = (verb: 'push' | 'pull', fsId: string, dir: string, r: SyncResult): View =>
  record([
    ['Filesystem', fsId],
    ['Directory', dir],
    ['Changed', r.files_changed],
    ['Added', r.added],
    ['Modified', r.modified],
    ['Deleted', r.deleted],
    [verb === 'push' ? 'Sent' : 'Received', formatBytes(r.bytes)],
    ['Checksum', r.checksum],
  ]);
