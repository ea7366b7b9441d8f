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
        ? zlib.createZstdCompress({
            // The frame's content checksum (XXH64 of the tar, checked by every decompression): it is what
            // lets syncDown take the server's per-file hashes instead of hashing each member (see ChecksummedFrames).
            params: { [zlib.constants.ZSTD_c_compressionLevel]: level, [zlib.constants.ZSTD_c_checksumFlag]: 1 },
          } as zlib.ZstdOptions)
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

/**
 * Whether every zstd frame of a compressed stream carries a content checksum, found by walking the
 * frames' headers and block headers (3 bytes per block of up to 128 KiB: no decoding). zstd checks
 * each such checksum as it decompresses, so a stream whose frames all have one decompresses to the
 * exact bytes that were compressed, or fails. Anything this walker does not understand (a reserved
 * block type, bytes that are no frame) makes the answer false; the decoder judges the stream itself.
 */
export class ChecksummedFrames {
  /** Bytes still to skip (block content, a checksum, a skippable frame's data). */
  private skip = 0;
  /** Bytes of the header being gathered, and how many are needed. */
  private readonly head = Buffer.alloc(18);
  private have = 0;
  private need = 4;
  private state: 'magic' | 'descriptor' | 'frameHeader' | 'block' | 'skippableSize' = 'magic';
  private ok = true;
  private frames = 0;

  push(chunk: Buffer): void {
    let at = 0;
    while (this.ok && at < chunk.length) {
      if (this.skip) {
        const n = Math.min(this.skip, chunk.length - at);
        this.skip -= n;
        at += n;
        continue;
      }
      const n = Math.min(this.need - this.have, chunk.length - at);
      chunk.copy(this.head, this.have, at, at + n);
      this.have += n;
      at += n;
      if (this.have === this.need) this.step();
    }
  }

  /** The answer, once the whole stream was pushed: at least one frame, each whole and checksummed. */
  end(): boolean {
    return this.ok && this.frames > 0 && this.state === 'magic' && this.have === 0 && this.skip === 0;
  }

  private expect(state: ChecksummedFrames['state'], need: number): void {
    this.state = state;
    this.need = need;
    this.have = 0;
  }

  private step(): void {
    const h = this.head;
    switch (this.state) {
      case 'magic': {
        const magic = h.readUInt32LE(0);
        if (magic === 0xfd2fb528) {
          this.frames++;
          this.expect('descriptor', 1);
        } else if ((magic & 0xfffffff0) === 0x184d2a50) this.expect('skippableSize', 4);
        else this.ok = false;
        return;
      }
      case 'skippableSize':
        this.skip = h.readUInt32LE(0);
        this.expect('magic', 4);
        return;
      case 'descriptor': {
        const d = h[0]!;
        // The reserved bit set, or no content checksum.
        if (d & 0x08 || !(d & 0x04)) {
          this.ok = false;
          return;
        }
        const singleSegment = (d & 0x20) !== 0;
        const fcsFlag = d >> 6;
        const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : fcsFlag === 1 ? 2 : fcsFlag === 2 ? 4 : 8;
        const dictBytes = [0, 1, 2, 4][d & 0x03]!;
        const rest = (singleSegment ? 0 : 1) + dictBytes + fcsBytes;
        if (rest) this.expect('frameHeader', rest);
        else this.expect('block', 3);
        return;
      }
      case 'frameHeader':
        this.expect('block', 3);
        return;
      case 'block': {
        const b = h[0]! | (h[1]! << 8) | (h[2]! << 16);
        const last = (b & 1) === 1;
        const type = (b >> 1) & 3;
        const size = b >>> 3;
        if (type === 3) {
          this.ok = false;
          return;
        }
        // Raw and compressed blocks carry `size` bytes; an RLE block one byte.
        this.skip = type === 1 ? 1 : size;
        if (!last) this.expect('block', 3);
        else {
          this.skip += 4; // the content checksum (every frame here has one)
          this.expect('magic', 4);
        }
        return;
      }
    }
  }
}
