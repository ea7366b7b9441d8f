import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 8: names that told one org about another. Task names and namespace slugs become unique
 * per org (globally unique data is unique per org, so existing rows stay valid). tasks.org_id
 * is filled from the namespace by a trigger, so every writer of tasks gets it right.
 */
export const script = /* sql */ `
ALTER TABLE tasks ADD COLUMN org_id text REFERENCES orgs(id);
UPDATE tasks SET org_id = n.org_id FROM namespaces n WHERE n.id = tasks.namespace_id;
ALTER TABLE tasks ALTER COLUMN org_id SET NOT NULL;
CREATE FUNCTION tasks_fill_org_id() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.org_id IS NULL THEN SELECT org_id INTO NEW.org_id FROM namespaces WHERE id = NEW.namespace_id; END IF; RETURN NEW; END $$;
CREATE TRIGGER tasks_fill_org_id BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION tasks_fill_org_id();
ALTER TABLE tasks DROP CONSTRAINT tasks_name_key;
CREATE UNIQUE INDEX tasks_org_name ON tasks (org_id, name);
ALTER TABLE namespaces DROP CONSTRAINT namespaces_slug_key;
CREATE UNIQUE INDEX namespaces_org_slug ON namespaces (org_id, slug);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
