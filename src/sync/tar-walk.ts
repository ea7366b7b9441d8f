// The tar structure of an archive, followed block by block on the decompressed bytes before the
// `tar` package's parser sees them (README "Filesystems and sync"). It judges every header from its
// raw bytes the moment it arrives (so a size claim past a limit is refused before a byte of its
// body is decompressed), sees names in every header that carries one (ustar fields, pax records,
// GNU long names), knows where the archive ends (the two zero blocks) and how much may follow it.
// Headers are decoded with the tar package's own Header, Pax and ReadEntry, as its parser decodes them.
// It is the archive reader's only parser: it also hands over each member's content as slices of the
// chunks it is given (no copy, no stream per member). A chunk is not kept past its push: its buffer
// may be reused (the reader decompresses into one buffer).
import { Header, Pax, ReadEntry } from 'tar';

/** A member header as the walker decoded it (pax and GNU long names applied). */
export interface MemberHeader {
  path: string;
  type: string;
  size: number;
  mode: number | undefined;
  linkpath: string | undefined;
}

/** Thrown by the walker's callers' `refuse`: the walker only says why. */
export type Refuse = (status: 413 | 422, message: string, member?: string) => never;

const META_TYPES = new Set(['ExtendedHeader', 'OldExtendedHeader', 'GlobalExtendedHeader', 'NextFileHasLongPath', 'NextFileHasLongLinkpath', 'OldGnuLongPath']);
/** The tar package ignores (rather than applies) larger pax or long-name data: refused instead. */
const MAX_META_BYTES = 1024 * 1024;
/** Zero bytes allowed after the end-of-archive blocks (tar pads to its record size: 10 KiB by default). */
export const MAX_END_PADDING = 1024 * 1024;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const roundUp = (n: number) => Math.ceil(n / 512) * 512;
const USTAR = Buffer.from('ustar\u000000');
const ZEROS = Buffer.alloc(64 * 1024);

/** Whether `bytes` are all zero, compared natively a slice at a time (a bomb's padding is checked at memory speed). */
function allZero(bytes: Buffer): boolean {
  for (let at = 0; at < bytes.length; at += ZEROS.length) {
    const part = bytes.subarray(at, at + ZEROS.length);
    if (!part.equals(ZEROS.subarray(0, part.length))) return false;
  }
  return true;
}

/** Why a raw name is not one the manifest can hold, or undefined: valid UTF-8, no NUL. */
function badName(bytes: Buffer): string | undefined {
  if (bytes.includes(0)) return 'a NUL byte';
  try {
    utf8.decode(bytes);
  } catch {
    return 'bytes that are not UTF-8';
  }
  return undefined;
}

/**
 * A fixed-size ustar field: the name ends at its first NUL and only NULs may follow it; a name
 * hidden after the NUL is refused.
 */
function badField(block: Buffer, offset: number, size: number): string | undefined {
  const field = block.subarray(offset, offset + size);
  const end = field.indexOf(0);
  // Compared natively: a callback per byte of every header's name fields cost more than the rest of the header's checks.
  if (end >= 0 && !allZero(field.subarray(end))) return 'a NUL byte';
  return badName(end >= 0 ? field.subarray(0, end) : field);
}

export class TarWalker {
  private state: 'header' | 'body' | 'meta' | 'end' = 'header';
  /** Bytes gathered towards a header block or a meta entry's data. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private need = 512;
  /** Content bytes of the current member still to pass, then its padding to the next block. */
  private bodyLeft = 0;
  private padLeft = 0;
  private metaType = '';
  private metaSize = 0;
  /** Pax and GNU long-name values for the next member header, as the parser keeps them. */
  private ex: Record<string, unknown> | undefined;
  private gex: Record<string, unknown> | undefined;
  private nullBlocks = 0;
  private padding = 0;
  /** The member whose body is passing, for a truncation message. */
  private current: MemberHeader | undefined;

  /**
   * `onMember` judges each header (it throws to refuse); `onContent` gets the member's content in
   * order, as slices of the pushed chunks; `onEnd` follows the member's last byte (at once for an
   * empty one).
   */
  constructor(
    private readonly onMember: (member: MemberHeader) => void,
    private readonly refuse: Refuse,
    private readonly onContent: (data: Buffer) => void = () => undefined,
    private readonly onEnd: (member: MemberHeader) => void = () => undefined,
  ) {}

  get ended(): boolean {
    return this.state === 'end';
  }

  /**
   * Follows `chunk` and returns the part of it the parser is to see: everything up to the end of
   * the archive. What follows the end must be zero padding, at most MAX_END_PADDING bytes.
   */
  push(chunk: Buffer): Buffer {
    let at = 0;
    while (at < chunk.length) {
      if (this.state === 'end') {
        const rest = chunk.subarray(at);
        this.padding += rest.length;
        if (!allZero(rest)) this.refuse(422, 'The archive has data after its end-of-archive blocks');
        if (this.padding > MAX_END_PADDING)
          this.refuse(413, `The archive expands past its end: more than ${MAX_END_PADDING} bytes of padding after the end-of-archive blocks`);
        return chunk.subarray(0, at);
      }
      if (this.state === 'body') {
        if (this.bodyLeft > 0) {
          const n = Math.min(this.bodyLeft, chunk.length - at);
          this.onContent(chunk.subarray(at, at + n));
          this.bodyLeft -= n;
          at += n;
          if (this.bodyLeft > 0) continue;
          this.onEnd(this.current!);
          if (this.padLeft > 0) continue;
          this.state = 'header';
          this.current = undefined;
          continue;
        }
        const n = Math.min(this.padLeft, chunk.length - at);
        this.padLeft -= n;
        at += n;
        if (this.padLeft === 0) {
          this.state = 'header';
          this.current = undefined;
        }
        continue;
      }
      const n = Math.min(this.need - this.pendingBytes, chunk.length - at);
      this.pending.push(chunk.subarray(at, at + n));
      this.pendingBytes += n;
      at += n;
      if (this.pendingBytes < this.need) {
        // The chunk ends inside a header or meta entry: keep a copy, the caller may reuse the chunk's buffer.
        this.pending[this.pending.length - 1] = Buffer.from(this.pending[this.pending.length - 1]!);
        continue;
      }
      const gathered = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
      this.pending = [];
      this.pendingBytes = 0;
      this.need = 512;
      if (this.state === 'header') this.header(gathered);
      else this.meta(gathered.subarray(0, this.metaSize));
    }
    return chunk;
  }

  /** At the end of the input: refuses an archive cut short (in a member, or before its end blocks). */
  finish(): void {
    if (this.state === 'end') return;
    if (this.state === 'body' && this.current) {
      const missing = this.bodyLeft + this.padLeft;
      this.refuse(
        422,
        `Member ${JSON.stringify(this.current.path)} is truncated: the archive ends ${missing} bytes before the end of its content`,
        this.current.path,
      );
    }
    this.refuse(
      422,
      this.state === 'meta' ? 'The archive ends inside an extended header' : 'The archive ends without its end-of-archive blocks: it is cut short',
    );
  }

  private header(block: Buffer): void {
    const header = new Header(block, 0, this.ex as never, this.gex as never);
    if (header.nullBlock) {
      if (++this.nullBlocks === 2) this.state = 'end';
      return;
    }
    this.nullBlocks = 0;
    if (!header.cksumValid) this.refuse(422, 'A member header is corrupt (its checksum does not match)');
    const type = header.type;
    const size = header.size ?? 0;
    if (META_TYPES.has(type)) {
      if (size > MAX_META_BYTES) this.refuse(422, `An extended header of ${size} bytes is larger than ${MAX_META_BYTES}`);
      if (size === 0) return;
      this.state = 'meta';
      this.metaType = type;
      this.metaSize = size;
      this.need = roundUp(size);
      return;
    }
    if (!header.path) this.refuse(422, 'A member header has no path');
    const ex = this.ex;
    this.ex = undefined;
    // What the parser will make of it: pax and GNU values override the header's fields (global ones too, but for the path).
    const read = new ReadEntry(header, ex as never, this.gex as never);
    // The fixed fields carry the names only where no pax record or GNU long name replaced them.
    if (ex?.path === undefined) {
      const ustar = block.subarray(257, 265).equals(USTAR);
      const why = badField(block, 0, 100) ?? (ustar ? badField(block, 345, block[475] !== 0 ? 155 : 130) : undefined);
      if (why) this.refuse(422, `Member ${JSON.stringify(read.path)} has ${why} in its name`, read.path);
    }
    if (ex?.linkpath === undefined && this.gex?.linkpath === undefined) {
      const why = badField(block, 157, 100);
      if (why) this.refuse(422, `Member ${JSON.stringify(read.path)} has ${why} in its link target`, read.path);
    }
    const member: MemberHeader = { path: read.path, type: read.type, size: read.size, mode: read.mode, linkpath: read.linkpath || undefined };
    this.onMember(member);
    if (member.size > 0) {
      this.state = 'body';
      this.bodyLeft = member.size;
      this.padLeft = roundUp(member.size) - member.size;
      this.current = member;
    } else this.onEnd(member);
  }

  private meta(data: Buffer): void {
    this.state = 'header';
    if (this.metaType === 'NextFileHasLongPath' || this.metaType === 'OldGnuLongPath' || this.metaType === 'NextFileHasLongLinkpath') {
      // GNU long names: the name, then NUL padding.
      let end = data.length;
      while (end > 0 && data[end - 1] === 0) end--;
      const name = data.subarray(0, end);
      const why = badName(name);
      const key = this.metaType === 'NextFileHasLongLinkpath' ? 'linkpath' : 'path';
      if (why) this.refuse(422, `A GNU long ${key === 'path' ? 'name' : 'link target'} has ${why}`);
      this.ex = { ...this.ex, [key]: name.toString('utf8') };
      return;
    }
    // Pax records `<length> <key>=<value>\n`; the parser drops a record it cannot read, so one is refused here.
    for (let at = 0; at < data.length; ) {
      const space = data.indexOf(0x20, at);
      const length = space > at ? Number(data.subarray(at, space).toString('latin1')) : NaN;
      const record = Number.isInteger(length) && length > space - at + 1 ? data.subarray(at, at + length) : undefined;
      if (!record || record.length !== length || record[length - 1] !== 0x0a) this.refuse(422, 'A pax extended header is malformed');
      const text = record.subarray(space - at + 1, length - 1);
      const equals = text.indexOf(0x3d);
      const key = equals > 0 ? text.subarray(0, equals).toString('utf8') : '';
      if (key === 'path' || key === 'linkpath') {
        const value = text.subarray(equals + 1);
        const why = badName(value) ?? (value.includes(0x0a) ? 'a newline' : undefined);
        if (why) this.refuse(422, `A pax ${key} has ${why}`);
      }
      at += length;
    }
    if (this.metaType === 'GlobalExtendedHeader') this.gex = Pax.parse(data.toString('utf8'), this.gex as never, true) as never;
    else this.ex = Pax.parse(data.toString('utf8'), this.ex as never, false) as never;
  }
}
