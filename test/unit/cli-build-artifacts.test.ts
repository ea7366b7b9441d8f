import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import { buildOpenApiDocument } from '../../src/contract/openapi.js';
import { completionScript } from '../../src/cli/completion.js';
import { endpointTableMarkdown, routesSource, withEndpointTable } from '../../src/contract/endpoint-docs.js';
import { endpoints } from '../../src/contract/endpoints.js';
import { routes } from '../../src/contract/routes.js';
import { commandModules, isCommand, manifestSource, type FoundCommand } from '../../src/cli/manifest-describe.js';

// `npm run build` writes these files; when the contract or the command registry changes without a
// rebuild, the committed copies go stale and these tests say so.
describe('committed build artifacts are up to date (run npm run build)', () => {
  test('src/cli/manifest.ts holds the declaration of every command module', async () => {
    const found: FoundCommand[] = [];
    for (const module of commandModules('src/cli')) {
      const { default: command } = await import(/* @vite-ignore */ path.resolve('src/cli', `${module}.ts`));
      if (isCommand(command)) found.push({ module, command });
    }
    expect(found.map((f) => f.command.path.join(' '))).toContain('tasks migrate');
    expect(readFileSync('src/cli/manifest.ts', 'utf8')).toBe(manifestSource(found));
  });

  test('src/contract/routes.ts holds the route of every endpoint, and nothing else', () => {
    expect(readFileSync('src/contract/routes.ts', 'utf8')).toBe(routesSource());
    expect(Object.keys(routes)).toEqual(Object.keys(endpoints));
    expect(routes.createTask).toEqual({ method: 'POST', path: '/tasks', status: 201, idempotencyKey: true });
  });

  test("README.md's endpoint table is the endpoint table's", () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toBe(withEndpointTable(readme));
    expect(endpointTableMarkdown()).toContain('| tasks | `POST /tasks` (`Idempotency-Key`), ');
  });

  test('openapi.json matches the endpoint table', () => {
    expect(JSON.parse(readFileSync('openapi.json', 'utf8'))).toEqual(buildOpenApiDocument(pkg.version));
  });

  test.each([
    ['bash', 'completions/agentctl.bash'],
    ['zsh', 'completions/_agentctl'],
    ['fish', 'completions/agentctl.fish'],
  ] as const)('completions for %s match the command registry', (shell, file) => {
    expect(readFileSync(file, 'utf8')).toBe(completionScript(shell));
  });

  test('the completion scripts know every command and its flags', () => {
    const bash = completionScript('bash');
    expect(bash).toContain("'tasks migrate') COMPREPLY=($(compgen -W \"--from --task --to --to-latest --agent -a --dry-run");
    expect(completionScript('fish')).toContain(
      "complete -c agentctl -n '__fish_seen_subcommand_from keys; and __fish_seen_subcommand_from create' -l preset -x -a 'deploy read-only agent-runner custom'",
    );
  });
});
