/** pino's numeric levels, for the readable form. */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

interface LogLine {
  level: number;
  time: number;
  msg?: string;
  reqId?: string;
  method?: string;
  path?: string;
  status?: number;
  duration_ms?: number;
  key_id?: string | null;
  err?: { type?: string; message?: string; stack?: string };
}

/**
 * A pino destination that writes each JSON line as a readable one (for a terminal):
 * `12:03:04 INFO  GET /tasks 200 3.1 ms key_01J... req_01J...`.
 */
export function readableLogStream(out: { write(text: string): unknown }): { write(line: string): void } {
  return {
    write(line: string) {
      let entry: LogLine;
      try {
        entry = JSON.parse(line) as LogLine;
      } catch {
        out.write(line);
        return;
      }
      const time = new Date(entry.time).toISOString().slice(11, 19);
      const level = (LEVELS[entry.level] ?? String(entry.level)).padEnd(5);
      const text =
        entry.msg === 'request'
          ? `${entry.method} ${entry.path} ${entry.status} ${entry.duration_ms} ms ${entry.key_id ?? '-'} ${entry.reqId ?? ''}`
          : `${entry.msg ?? ''}${entry.reqId ? ` ${entry.reqId}` : ''}`;
      out.write(`${time} ${level} ${text.trimEnd()}\n${entry.err?.stack ? `${entry.err.stack}\n` : ''}`);
    },
  };
}
