import { describe, expect, test } from 'vitest';
import { shellCommand, shellQuote } from '../../src/cli/shell.js';

describe('printed commands paste into a POSIX shell', () => {
  test('plain words stay as they are', () => {
    expect(shellCommand('agentctl', 'rollback', '--agent', 'default/bot', '--branch', 'feature/x', '--to', 'ver_01J', '--yes')).toBe(
      'agentctl rollback --agent default/bot --branch feature/x --to ver_01J --yes',
    );
  });
  test('JSON, spaces and quotes are single-quoted', () => {
    expect(shellCommand('agentctl', 'tasks', 'create', '--params', '{"n": 1}', '--name', "Ada's task")).toBe(
      `agentctl tasks create --params '{"n": 1}' --name 'Ada'\\''s task'`,
    );
  });
  test('an empty argument is kept as two quotes; left-out optional words vanish', () => {
    expect(shellCommand('agentctl', 'x', '', false, undefined, null, 3)).toBe("agentctl x '' 3");
    expect(shellQuote('$HOME')).toBe("'$HOME'");
  });
});
