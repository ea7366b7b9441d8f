import { z } from 'zod';
import { QueryBool, Timestamp } from './common.js';
import { LOG_TAIL } from './enums.js';

/** One line an agent process wrote (README "Local runtime and logs"). */
export const VersionLogLine = z
  .object({
    version_id: z.string(),
    /** The replica (0-based) that wrote it. */
    replica: z.number().int().min(0),
    stream: z.enum(['stdout', 'stderr']),
    /** When the runtime captured it. */
    time: Timestamp,
    line: z.string(),
    /** A structured line (the ADK's `ctx.log`, JSON): the turn it was written in (README "Traces"). */
    task_id: z.string().optional(),
    trace_id: z.string().optional(),
  })
  .meta({ id: 'VersionLogLine' });
export type VersionLogLine = z.infer<typeof VersionLogLine>;

export const VersionLogsQuery = z.object({
  /** The last N lines (all replicas merged by time); 0 with `follow` sends only new lines. */
  tail: z.coerce.number().int().min(LOG_TAIL.min).max(LOG_TAIL.max).default(LOG_TAIL.default),
  /** Only lines captured at or after this instant. */
  since: z.iso.datetime({ offset: true }).optional(),
  /** Keep the response open as Server-Sent Events (`event: log`), one per new line. */
  follow: QueryBool.default(false),
  /** Only structured lines (JSON with `task_id`, as the ADK's `ctx.log` writes them) of this task. */
  task_id: z.string().min(1).max(255).optional(),
  /** Only structured lines of this trace (`trace_id`). */
  trace_id: z
    .string()
    .regex(/^[0-9a-f]{32}$/, 'must be a trace id: 32 lower-case hex digits')
    .optional(),
});

export const VersionLogs = z.object({ lines: z.array(VersionLogLine) }).meta({ id: 'VersionLogs' });
export type VersionLogs = z.infer<typeof VersionLogs>;

export { LOG_SSE_EVENT } from './enums.js';
