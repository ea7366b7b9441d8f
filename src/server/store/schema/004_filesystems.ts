import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Filesystems: archive metadata on filesystems, and each task's system folders.
 * The folder types are written out (they were read from the contract's SYSTEM_FOLDER_TYPES when
 * this shipped): a schema change never changes once applied; a new type takes a new schema change.
 */
export const script = /* sql */ `
ALTER TABLE filesystems ADD COLUMN archive_checksum text;
ALTER TABLE filesystems ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN files_count integer NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN archive_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE filesystems ADD COLUMN blob_key text;
ALTER TABLE filesystems ADD COLUMN manifest_key text;
ALTER TABLE filesystems ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
ALTER TABLE filesystems ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX filesystems_project ON filesystems (project_id);
CREATE INDEX tasks_filesystem ON tasks (filesystem_id);
CREATE INDEX versions_source_filesystem ON versions (source_filesystem_id);

CREATE TABLE task_system_folders (
  task_id text NOT NULL REFERENCES tasks(id),
  type text NOT NULL CHECK (type IN ('dot_alpha','dot_beta')),
  filesystem_id text NOT NULL REFERENCES filesystems(id),
  PRIMARY KEY (task_id, type)
);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
