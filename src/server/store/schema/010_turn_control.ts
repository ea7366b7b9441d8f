import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Turn control (issue 21): a delivery has a kind (`turn`, or a control delivery such as `interrupt`
 * that does not wait behind the task's open turn), the ACP method `task/interrupt`, and a version
 * keeps its agent's double-texting policy (agentctl.json `double_texting`).
 */
export const script = /* sql */ `
ALTER TABLE deliveries ADD COLUMN kind text NOT NULL DEFAULT 'turn';
ALTER TABLE deliveries ADD CONSTRAINT deliveries_kind_check CHECK (kind IN ('turn','interrupt'));
ALTER TABLE deliveries DROP CONSTRAINT deliveries_method_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_method_check CHECK (method IN ('task/create','event/send','task/cancel','message/send','task/interrupt'));
ALTER TABLE versions ADD COLUMN double_texting text NOT NULL DEFAULT 'enqueue';
ALTER TABLE versions ADD CONSTRAINT versions_double_texting_check CHECK (double_texting IN ('enqueue','interrupt','reject','merge'));
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
