import { sql, type Kysely, type Selectable } from 'kysely';
import type { Environment } from '../../contract/resources.js';
import type { Database, Db, EnvironmentsTable } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { ValidationFailure, conflict, missing, type ValidationItem, notFound } from './errors.js';
import { newId } from '../store/ids.js';
import { toEnvironment } from '../store/mappers.js';
import { isUniqueViolation } from '../store/sql.js';
import { agentByPath } from './lookup.js';
import { isWildcard, resolveEnvironmentFor, ruleProblem } from './branch-rules.js';

type Executor = Db | Kysely<Database>;
type AgentRef = { namespace_slug: string; agent_name: string };
type EnvironmentRow = Selectable<EnvironmentsTable>;

const rulesOf = (row: EnvironmentRow) => row.branch_rules as string[];

async function environmentsOf(db: Executor, agentId: string): Promise<EnvironmentRow[]> {
  return db.selectFrom('environments').selectAll().where('agent_id', '=', agentId).orderBy('created_at').orderBy('id').execute();
}

/** One environment of an agent by name; 404 naming both when there is none. */
export async function environmentByName(db: Executor, agentId: string, ref: AgentRef, envName: string): Promise<EnvironmentRow> {
  const env = await db.selectFrom('environments').selectAll().where('agent_id', '=', agentId).where('name', '=', envName).executeTakeFirst();
  if (!env) throw notFound(`Environment ${envName} of agent ${ref.namespace_slug}/${ref.agent_name}`);
  return env;
}

/** Well-formed rules, duplicates folded (first occurrence kept); 422 at `body.branch_rules[i]` otherwise. */
export function normalizeRules(rules: readonly string[]): string[] {
  const items: ValidationItem[] = [];
  rules.forEach((rule, index) => {
    const problem = ruleProblem(rule);
    if (problem) items.push({ loc: ['body', 'branch_rules', index], msg: problem, type: 'value_error' });
  });
  if (items.length) throw new ValidationFailure(items);
  return [...new Set(rules)];
}

/** The production environment keeps exactly one literal rule: the branch production deploys from. */
function checkProdRules(rules: readonly string[]): void {
  if (rules.length !== 1 || isWildcard(rules[0])) {
    throw new ValidationFailure([
      { loc: ['body', 'branch_rules'], msg: 'The production environment takes exactly one branch name, without wildcards', type: 'value_error' },
    ]);
  }
}

/**
 * A rule belongs to at most one environment of an agent, so every branch resolves to one
 * environment. 409 `branch_rule_conflict` names the environment that already has the rule.
 */
function checkRulesUnclaimed(others: readonly EnvironmentRow[], rules: readonly string[]): void {
  for (const other of others) {
    const taken = rules.find((rule) => rulesOf(other).includes(rule));
    if (taken !== undefined) throw conflict('branch_rule_conflict', `Rule ${taken} already belongs to environment ${other.name}`);
  }
}

/** Locks the agent row: environment writes of one agent serialize, so the rule check holds. */
async function lockAgent(trx: Kysely<Database>, agentId: string): Promise<void> {
  await trx.selectFrom('agents').select('id').where('id', '=', agentId).forNoKeyUpdate().execute();
}

export async function listEnvironments(db: Db, perms: Permissions, ref: AgentRef): Promise<{ environments: Environment[]; total: number }> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  const rows = await environmentsOf(db, agent.id);
  return { environments: rows.map(toEnvironment), total: rows.length };
}

export async function getEnvironment(db: Db, perms: Permissions, ref: AgentRef, envName: string): Promise<Environment> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  return toEnvironment(await environmentByName(db, agent.id, ref, envName));
}

/** `POST .../environments`: 201; never `is_prod` (only deploy creates the production environment). */
export async function createEnvironment(
  db: Db,
  perms: Permissions,
  ref: AgentRef,
  input: { name: string; description: string; branch_rules: string[] },
): Promise<Environment> {
  const agent = await agentByPath(db, perms, 'write', ref.namespace_slug, ref.agent_name);
  const rules = normalizeRules(input.branch_rules);
  try {
    const row = await db.transaction().execute(async (trx) => {
      await lockAgent(trx, agent.id);
      const existing = await environmentsOf(trx, agent.id);
      if (existing.some((e) => e.name === input.name)) throw environmentExists(ref, input.name);
      checkRulesUnclaimed(existing, rules);
      return trx
        .insertInto('environments')
        .values({
          id: newId('environment'),
          agent_id: agent.id,
          name: input.name,
          description: input.description,
          is_prod: false,
          branch_rules: JSON.stringify(rules),
        })
        .returningAll()
        .executeTakeFirstOrThrow();
    });
    return toEnvironment(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw environmentExists(ref, input.name);
    throw error;
  }
}

const environmentExists = (ref: AgentRef, name: string) =>
  conflict('environment_exists', `Agent ${ref.namespace_slug}/${ref.agent_name} already has an environment named ${name}`);

export async function updateEnvironment(
  db: Db,
  perms: Permissions,
  ref: AgentRef,
  envName: string,
  input: { description?: string; branch_rules?: string[] },
): Promise<Environment> {
  const agent = await agentByPath(db, perms, 'write', ref.namespace_slug, ref.agent_name);
  const rules = input.branch_rules === undefined ? undefined : normalizeRules(input.branch_rules);
  const row = await db.transaction().execute(async (trx) => {
    await lockAgent(trx, agent.id);
    const env = await environmentByName(trx, agent.id, ref, envName);
    if (rules !== undefined) {
      if (env.is_prod) checkProdRules(rules);
      checkRulesUnclaimed(
        (await environmentsOf(trx, agent.id)).filter((e) => e.id !== env.id),
        rules,
      );
    }
    if (rules === undefined && input.description === undefined) return env;
    return trx
      .updateTable('environments')
      .set({
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(rules !== undefined ? { branch_rules: JSON.stringify(rules) } : {}),
        updated_at: sql<Date>`now()`,
      })
      .where('id', '=', env.id)
      .returningAll()
      .executeTakeFirstOrThrow();
  });
  return toEnvironment(row);
}

/** `DELETE .../environments/{env}`: the production environment cannot be deleted (409). */
export async function deleteEnvironment(db: Db, perms: Permissions, ref: AgentRef, envName: string): Promise<{ id: string; message: string }> {
  const agent = await agentByPath(db, perms, 'write', ref.namespace_slug, ref.agent_name);
  const env = await environmentByName(db, agent.id, ref, envName);
  if (env.is_prod) throw conflict('prod_environment', `Environment ${envName} is the production environment and cannot be deleted`);
  await db.deleteFrom('environments').where('id', '=', env.id).execute();
  return { id: env.id, message: `Environment ${envName} of agent ${ref.namespace_slug}/${ref.agent_name} deleted` };
}

/** `GET .../resolve-env?branch=`: the environment a git branch falls in; 404 `no_environment` when none. */
export async function resolveEnvironment(db: Db, perms: Permissions, ref: AgentRef, branch: string): Promise<{ branch: string; environment: Environment }> {
  const agent = await agentByPath(db, perms, 'read', ref.namespace_slug, ref.agent_name);
  const candidates = (await environmentsOf(db, agent.id)).map((row) => ({ row, branch_rules: rulesOf(row) }));
  const env = resolveEnvironmentFor(candidates, branch)?.row;
  if (!env) throw missing(`No environment of agent ${ref.namespace_slug}/${ref.agent_name} has a rule matching branch ${branch}`, 'no_environment');
  return { branch, environment: toEnvironment(env) };
}
