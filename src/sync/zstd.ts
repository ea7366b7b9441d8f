// zstd for the archive format, driven synchronously: node:zlib's zstd streams send every write to the
// thread pool and allocate a fresh output buffer per chunk, which cost the sync bench 4-5x the CPU of
// the codec itself (48 MiB: about 100 ms a direction through the streams, 20-30 ms here, as `zstd -1`
// and `zstd -d` take). A ZstdCodec calls the same native handle the streams use, the way node:zlib's
// own *Sync functions do (`handle.writeSync` and its `_writeState`), into an output buffer it reuses.
import zlib from 'node:zlib';

/** The two counters node:zlib's handle reports after each writeSync: output space left, input left. */
type WriteState = Uint32Array;
interface ZstdHandle {
  writeSync(flush: number, input: Buffer, inOff: number, inLen: number, out: Buffer, outOff: number, outLen: number): void;
  close(): void;
  onerror: (message: string, errno: number, code: string) => void;
}

/** A zstd error as node:zlib's streams raise it (same message and code), so callers judge it alike. */
export class ZstdError extends Error {
  constructor(
    message: string,
    readonly errno: number,
    readonly code: string,
  ) {
    super(message);
  }
}

/** Output produced per call to `emit`; 1 MiB keeps per-piece costs (hashing, walking) low. */
export const ZSTD_OUT_SIZE = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * One zstd compression or decompression context. `push` feeds input and yields its output piece by
 * piece as views of the codec's own buffer: a view is valid only until the next one is asked for (copy
 * it to keep it); the caller may await between pieces. `end` finishes the frame (compression) or
 * checks that the input ended with a whole frame (decompression: `unexpected end of file`, code
 * Z_BUF_ERROR, as the streams say).
 */
export class ZstdCodec {
  private readonly handle: ZstdHandle;
  private readonly state: WriteState;
  private readonly out: Buffer;
  private error: ZstdError | undefined;
  private closed = false;

  constructor(kind: 'compress' | 'decompress', level = 1, outSize = ZSTD_OUT_SIZE) {
    const stream =
      kind === 'compress'
        ? zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: level } } as zlib.ZstdOptions)
        : zlib.createZstdDecompress();
    const internals = stream as unknown as { _handle?: ZstdHandle; _writeState?: WriteState };
    if (typeof internals._handle?.writeSync !== 'function' || !(internals._writeState instanceof Uint32Array))
      throw new Error("This Node.js's zlib has no zstd handle with writeSync: the sync library needs Node.js 22.15 or later");
    this.handle = internals._handle;
    this.state = internals._writeState;
    // Errors come through the handle's callback during writeSync; the stream object is not used again.
    this.handle.onerror = (message, errno, code) => {
      this.error ??= new ZstdError(message, errno, code);
    };
    this.out = Buffer.allocUnsafeSlow(outSize);
  }

  push(input: Buffer): Generator<Buffer, void, undefined> {
    return this.run(input, zlib.constants.ZSTD_e_continue);
  }

  *end(): Generator<Buffer, void, undefined> {
    try {
      yield* this.run(EMPTY, zlib.constants.ZSTD_e_end);
    } finally {
      this.close();
    }
  }

  /** Frees the native context (safe to call twice). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.handle.close();
  }

  private *run(input: Buffer, flush: number): Generator<Buffer, void, undefined> {
    if (this.closed) throw new Error('The zstd codec is closed');
    const out = this.out;
    let inOff = 0;
    let inLen = input.length;
    for (;;) {
      this.handle.writeSync(flush, input, inOff, inLen, out, 0, out.length);
      if (this.error) {
        this.close();
        throw this.error;
      }
      const outLeft = this.state[0]!;
      const inLeft = this.state[1]!;
      inOff += inLen - inLeft;
      inLen = inLeft;
      if (outLeft < out.length) yield out.subarray(0, out.length - outLeft);
      // A full output buffer may hide more output; otherwise all input was taken (and, at the end, flushed).
      if (outLeft !== 0 && inLen === 0) return;
    }
  }
}
