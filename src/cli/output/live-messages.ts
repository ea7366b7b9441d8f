import type { Message, MessageContent, MessageDelta } from '../../contract/conversation.js';

interface Open {
  /** What the message reads as so far (prefix and streamed field). */
  text: string;
  /** What of it is on the output already. */
  shown: string;
}

/** How a part reads while it streams: a prefix, its streamed field, and (once finished) a suffix. */
function reading(content: MessageContent, author: Message['author']): { prefix: string; body: string; suffix: string } | undefined {
  switch (content.type) {
    case 'text':
      return { prefix: author === 'user' ? 'you: ' : '', body: content.text, suffix: '' };
    case 'reasoning':
      return { prefix: '(thinking) ', body: content.summary, suffix: '' };
    case 'tool_request':
      return { prefix: `→ ${content.name}(`, body: content.arguments, suffix: `) [${content.call_id}]` };
    default:
      return undefined;
  }
}

/**
 * Streamed messages as `tasks watch` prints them: on a terminal (`inPlace`) each delta as it arrives;
 * piped, whole lines as they complete; either way the rest and a newline when the message finishes.
 * A message that finished before the watch saw it stream is left to the caller, printed whole.
 */
export class LiveMessages {
  private readonly open = new Map<string, Open>();
  /** On a terminal: the message whose unfinished line the cursor is on. */
  private lineOf: string | undefined;

  constructor(
    private readonly write: (text: string) => void,
    private readonly inPlace: boolean,
  ) {}

  /** A `message` or `message_update` record: true when it was printed here (streaming, or the end of a stream seen here). */
  message(message: Message): boolean {
    const parts = reading(message.content, message.author);
    if (!parts) return false;
    if (message.streaming_status === 'IN_PROGRESS') {
      const entry = this.open.get(message.id) ?? { text: '', shown: '' };
      this.open.set(message.id, entry);
      entry.text = parts.prefix + parts.body;
      this.render(message.id, entry);
      return true;
    }
    const entry = this.open.get(message.id);
    if (!entry) return false;
    this.open.delete(message.id);
    this.finish(message.id, entry, parts.prefix + parts.body + parts.suffix);
    return true;
  }

  /** A `message_delta` record. */
  delta(delta: MessageDelta): void {
    // A watch resumed in the middle of a message has not seen it created: it starts from here.
    const entry = this.open.get(delta.message_id) ?? { text: '', shown: '' };
    this.open.set(delta.message_id, entry);
    entry.text += delta.delta;
    this.render(delta.message_id, entry);
  }

  private render(id: string, entry: Open): void {
    if (this.inPlace) {
      if (this.lineOf !== undefined && this.lineOf !== id) this.write('\n');
      this.show(entry, entry.text);
      this.lineOf = id;
    } else {
      this.show(entry, entry.text.slice(0, entry.text.lastIndexOf('\n') + 1));
    }
  }

  /** Writes what `upTo` adds to what is shown; text that was replaced rather than extended starts on a new line. */
  private show(entry: Open, upTo: string): void {
    if (upTo === entry.shown) return;
    if (upTo.length < entry.shown.length && entry.shown.startsWith(upTo)) return;
    if (upTo.startsWith(entry.shown)) this.write(upTo.slice(entry.shown.length));
    else this.write(`${entry.shown && !entry.shown.endsWith('\n') ? '\n' : ''}${upTo}`);
    entry.shown = upTo;
  }

  private finish(id: string, entry: Open, final: string): void {
    if (this.inPlace && this.lineOf !== undefined && this.lineOf !== id) this.write('\n');
    if (this.lineOf === id || (this.inPlace && this.lineOf !== undefined)) this.lineOf = undefined;
    this.show(entry, final);
    this.write('\n');
  }
}
