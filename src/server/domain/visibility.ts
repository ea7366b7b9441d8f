import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Visibility } from '../auth/policy.js';

/**
 * A WHERE condition admitting the rows `visibility` allows: every row, or those in an administered
 * namespace or named by id. Lets a list be filtered, counted and paged in the database.
 */
export function visibleRows<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  visibility: Visibility,
  namespaceColumn: string,
  idColumn: string,
): Expression<SqlBool> {
  if (visibility.all) return sql<SqlBool>`true`;
  const admitted: Expression<SqlBool>[] = [];
  if (visibility.namespaceIds.length > 0) admitted.push(sql<SqlBool>`${sql.ref(namespaceColumn)} = ANY(${visibility.namespaceIds}::text[])`);
  if (visibility.ids.length > 0) admitted.push(sql<SqlBool>`${sql.ref(idColumn)} = ANY(${visibility.ids}::text[])`);
  return admitted.length === 0 ? sql<SqlBool>`false` : eb.or(admitted);
}
