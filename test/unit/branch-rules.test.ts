import { describe, expect, test } from 'vitest';
import { anyRuleMatches, matchStrength, parseRule, resolveEnvironmentFor, ruleMatches, ruleProblem } from '../../src/server/domain/branch-rules.js';

describe('branch rules', () => {
  test('three kinds: exact, prefix wildcard, catch-all', () => {
    expect(parseRule('main')).toEqual({ rule: 'main', kind: 'exact', literal: 'main' });
    expect(parseRule('feature/*')).toEqual({ rule: 'feature/*', kind: 'prefix', literal: 'feature/' });
    expect(parseRule('*')).toEqual({ rule: '*', kind: 'catch_all', literal: '' });
  });

  test.each([
    ['main', 'main', true],
    ['main', 'mainline', false],
    ['main', 'Main', false],
    ['feature/*', 'feature/x', true],
    ['feature/*', 'feature/x/y', true],
    ['feature/*', 'feature', false],
    ['feature/*', 'featured/x', false],
    ['release-*', 'release-1.2', true],
    ['*', 'anything/at-all', true],
  ])('rule %s against branch %s: %s', (rule, branch, expected) => {
    expect(ruleMatches(rule, branch)).toBe(expected);
  });

  test('a star may only end a rule', () => {
    expect(ruleProblem('feature/*')).toBeNull();
    expect(ruleProblem('*')).toBeNull();
    expect(ruleProblem('main')).toBeNull();
    expect(ruleProblem('*/hotfix')).toMatch(/may only end a rule/);
    expect(ruleProblem('release/*/x')).toMatch(/may only end a rule/);
    expect(ruleProblem('a**')).toMatch(/may only end a rule/);
    expect(ruleProblem(' main')).toMatch(/without surrounding spaces/);
    expect(ruleProblem('')).toMatch(/non-empty/);
  });

  test('strength: exact beats any prefix, a longer prefix beats a shorter one, * comes last', () => {
    const branch = 'feature/ui/button';
    expect(matchStrength('feature/ui/button', branch)!).toBeGreaterThan(matchStrength('feature/ui/*', branch)!);
    expect(matchStrength('feature/ui/*', branch)!).toBeGreaterThan(matchStrength('feature/*', branch)!);
    expect(matchStrength('feature/*', branch)!).toBeGreaterThan(matchStrength('*', branch)!);
    expect(matchStrength('main', branch)).toBeNull();
  });

  test('anyRuleMatches: one matching rule is enough', () => {
    expect(anyRuleMatches(['main', 'release/*'], 'release/2')).toBe(true);
    expect(anyRuleMatches(['main', 'release/*'], 'feature/2')).toBe(false);
    expect(anyRuleMatches([], 'main')).toBe(false);
  });

  describe('resolveEnvironmentFor', () => {
    const envs = [
      { name: 'production', branch_rules: ['main'] },
      { name: 'preview', branch_rules: ['*'] },
      { name: 'features', branch_rules: ['feature/*'] },
      { name: 'ui', branch_rules: ['feature/ui/*', 'design'] },
      { name: 'login', branch_rules: ['feature/ui/login'] },
    ];
    const resolve = (branch: string) => resolveEnvironmentFor(envs, branch)?.name;

    test('an exact rule wins over every wildcard', () => {
      expect(resolve('main')).toBe('production');
      expect(resolve('feature/ui/login')).toBe('login');
      expect(resolve('design')).toBe('ui');
    });

    test('else the longest matching prefix wildcard', () => {
      expect(resolve('feature/ui/button')).toBe('ui');
      expect(resolve('feature/api')).toBe('features');
    });

    test('else the catch-all', () => {
      expect(resolve('hotfix/1')).toBe('preview');
    });

    test('no matching rule: undefined', () => {
      expect(
        resolveEnvironmentFor(
          envs.filter((e) => e.name !== 'preview'),
          'hotfix/1',
        ),
      ).toBeUndefined();
      expect(resolveEnvironmentFor([], 'main')).toBeUndefined();
    });

    test('the order of the environments does not change the answer', () => {
      const reversed = [...envs].reverse();
      for (const branch of ['main', 'feature/ui/login', 'feature/ui/x', 'feature/x', 'other']) {
        expect(resolveEnvironmentFor(reversed, branch)?.name).toBe(resolve(branch));
      }
    });
  });
});
