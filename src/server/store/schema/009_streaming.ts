import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Streamed messages (issue 21): a message's stream can also end INTERRUPTED or FAILED, with the
 * writer's reason; each delta appended to a message is a `message_delta` record of the task stream.
 */
export const script = /* sql */ `
ALTER TABLE messages DROP CONSTRAINT messages_streaming_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_streaming_status_check CHECK (streaming_status IN ('IN_PROGRESS','DONE','INTERRUPTED','FAILED'));
ALTER TABLE messages ADD COLUMN streaming_error text;
ALTER TABLE task_stream DROP CONSTRAINT task_stream_kind_check;
ALTER TABLE task_stream ADD CONSTRAINT task_stream_kind_check CHECK (kind IN ('event','message','message_update','message_delta','task','tracker'));
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
