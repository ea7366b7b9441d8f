/**
 * Environment branch rules (README "Versions and migration, in short"): an exact git branch name (`main`), a prefix
 * wildcard (`feature/*`) or the catch-all `*`. Pure functions: no I/O.
 */

export type RuleKind = 'exact' | 'prefix' | 'catch_all';

export interface ParsedRule {
  rule: string;
  kind: RuleKind;
  /** The literal part: the whole name for `exact`, the text before `*` for `prefix`, '' for `*`. */
  literal: string;
}

/** Why a rule is not well formed, or null when it is. Only one `*`, and only at the end. */
export function ruleProblem(rule: string): string | null {
  if (rule.trim() !== rule || rule === '') return 'a rule is a non-empty branch name without surrounding spaces';
  const star = rule.indexOf('*');
  if (star !== -1 && star !== rule.length - 1) return `rule ${rule}: \`*\` may only end a rule (\`feature/*\`) or stand alone (\`*\`)`;
  return null;
}

export function parseRule(rule: string): ParsedRule {
  if (rule === '*') return { rule, kind: 'catch_all', literal: '' };
  if (rule.endsWith('*')) return { rule, kind: 'prefix', literal: rule.slice(0, -1) };
  return { rule, kind: 'exact', literal: rule };
}

export const isWildcard = (rule: string) => rule.includes('*');

export function ruleMatches(rule: string, branch: string): boolean {
  const parsed = parseRule(rule);
  switch (parsed.kind) {
    case 'catch_all':
      return true;
    case 'prefix':
      return branch.startsWith(parsed.literal);
    case 'exact':
      return branch === parsed.literal;
  }
}

export const anyRuleMatches = (rules: readonly string[], branch: string) => rules.some((rule) => ruleMatches(rule, branch));

/**
 * How strongly a rule selects `branch`: exact beats every wildcard, a longer prefix beats a shorter
 * one, and `*` comes last. null when the rule does not match.
 */
export function matchStrength(rule: string, branch: string): number | null {
  if (!ruleMatches(rule, branch)) return null;
  const parsed = parseRule(rule);
  switch (parsed.kind) {
    case 'exact':
      return Number.MAX_SAFE_INTEGER;
    case 'prefix':
      return 1 + parsed.literal.length;
    case 'catch_all':
      return 0;
  }
}

/**
 * The environment a git branch falls in: the one with an exact rule for it, else the one with the
 * longest matching prefix wildcard, else the one with `*`; undefined when no rule matches. Rules are
 * unique across an agent's environments, so the strongest match is never shared.
 */
export function resolveEnvironmentFor<E extends { branch_rules: readonly string[] }>(environments: readonly E[], branch: string): E | undefined {
  let best: { env: E; strength: number } | undefined;
  for (const env of environments) {
    for (const rule of env.branch_rules) {
      const strength = matchStrength(rule, branch);
      if (strength !== null && (!best || strength > best.strength)) best = { env, strength };
    }
  }
  return best?.env;
}
