import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 22, rehearsals from a sequence: the task's files as they were when its event S was recorded.
 * - filesystem_history: an archive of a task's filesystem as it stood before it was replaced, with
 *   the task's last sequence number (tasks.last_sequence_id) when it was replaced. A trigger on
 *   filesystems writes it whenever the archive changes (blob_key), so the upload path gains no
 *   statement; a filesystem with no archive yet is kept as a row without one (no files). Several
 *   uploads at one sequence (between two events) keep only the first replaced archive (the one
 *   current when that sequence was reached): a task keeps one row per sequence at which its files
 *   changed. Only filesystems a task uses get rows, one per such task. The archive current before S
 *   is the row with the smallest sequence >= S, else the current one.
 * - The blob sweep counts these rows' keys as references. Rows go with their task or filesystem.
 * - rehearsal_tasks.start_files_count / start_archive_checksum: the files the shadow started from
 *   (count 0 and no checksum: none), for the report's start line; null count on rows made before.
 */
export const script = /* sql */ `
CREATE TABLE filesystem_history (
  filesystem_id text NOT NULL REFERENCES filesystems(id) ON DELETE CASCADE,
  task_id text NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
  replaced_at_sequence integer NOT NULL,
  archive_checksum text,
  size_bytes bigint NOT NULL,
  files_count integer NOT NULL,
  archive_bytes bigint NOT NULL,
  blob_key text,
  manifest_key text,
  PRIMARY KEY (task_id, filesystem_id, replaced_at_sequence)
);
CREATE INDEX filesystem_history_filesystem ON filesystem_history (filesystem_id);

CREATE FUNCTION filesystems_keep_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO filesystem_history (filesystem_id, task_id, replaced_at_sequence, archive_checksum, size_bytes, files_count, archive_bytes, blob_key, manifest_key)
    SELECT OLD.id, t.id, t.last_sequence_id, OLD.archive_checksum, OLD.size_bytes, OLD.files_count, OLD.archive_bytes, OLD.blob_key, OLD.manifest_key
    FROM tasks t WHERE t.filesystem_id = OLD.id
    ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER filesystems_keep_history AFTER UPDATE OF blob_key ON filesystems
  FOR EACH ROW WHEN (OLD.blob_key IS DISTINCT FROM NEW.blob_key) EXECUTE FUNCTION filesystems_keep_history();

ALTER TABLE rehearsal_tasks ADD COLUMN start_files_count integer;
ALTER TABLE rehearsal_tasks ADD COLUMN start_archive_checksum text;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
