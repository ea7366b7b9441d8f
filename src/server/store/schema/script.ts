import { sql, type Kysely } from 'kysely';

/**
 * Marks a SQL script: several statements sent whole, so a function or trigger body (`$$ ... $$`)
 * may hold semicolons. PostgreSQL takes a script as one simple query (node-postgres sends a query
 * without parameters that way); PGlite's query() takes one statement only, so its connection
 * (store/db.ts) sends text that starts with this mark through exec() instead.
 */
export const SCRIPT_MARK = '-- agentctl: script\n';

/** Runs `text` (any number of statements, no parameters) in the caller's transaction. */
export async function runScript(db: Kysely<unknown>, text: string): Promise<void> {
  await sql.raw(SCRIPT_MARK + text).execute(db);
}
