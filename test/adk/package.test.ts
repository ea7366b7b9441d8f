import { execa } from 'execa';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from '../cli/support.js';
import { repoRoot } from '../support/agent-process.js';

// The `agentctl/adk` package export as an agent author gets it: the built bundle and its declarations,
// resolved through node_modules/agentctl exactly as `agentctl init` and the local runtime link it.

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
let tmp: ReturnType<typeof tempDir>;

beforeAll(async () => {
  await execa(process.execPath, [path.join(repoRoot, 'scripts/build-adk.mjs')], { cwd: repoRoot });
  tmp = tempDir('agentctl-adk-pkg-');
}, 180_000);
afterAll(() => tmp?.remove());

/** A copy of a project outside the repository, linked to this agentctl like `agentctl init` does. */
function projectCopy(source: string, name: string): string {
  const dir = path.join(tmp.dir, name);
  cpSync(source, dir, { recursive: true, filter: (p) => !p.includes(`${path.sep}node_modules`) });
  mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  symlinkSync(repoRoot, path.join(dir, 'node_modules', 'agentctl'), 'dir');
  return dir;
}

const typecheck = (dir: string) => execa(process.execPath, [tsc, '--noEmit', '-p', dir], { cwd: dir, reject: false });

describe('agentctl/adk package', () => {
  it('bundles only the client, the contract, the sync library and itself: nothing of the CLI or the server', () => {
    const meta = JSON.parse(readFileSync(path.join(repoRoot, 'dist/adk/meta.json'), 'utf8'));
    const sources = Object.keys(meta.inputs);
    expect(sources.filter((s) => !/^src\/(adk|client|contract|sync)\//.test(s))).toEqual([]);
    expect(sources).toContain('src/adk/server.ts');
    const externals = new Set<string>();
    for (const output of Object.values(meta.outputs) as { imports: { path: string; external?: boolean }[] }[]) {
      for (const i of output.imports) if (i.external) externals.add(i.path.startsWith('node:') ? 'node:' : i.path);
    }
    // OpenTelemetry's SDK and exporter load only when the agent's environment names an OTLP endpoint (README "Traces").
    expect([...externals].sort()).toEqual([
      '@opentelemetry/api',
      '@opentelemetry/exporter-trace-otlp-http',
      '@opentelemetry/resources',
      '@opentelemetry/sdk-trace',
      'ignore',
      'node:',
      'tar',
      'undici',
      'zod',
    ]);
  });

  it('imports from a project linked to agentctl, with the documented exports', async () => {
    const dir = projectCopy(path.join(repoRoot, 'examples/echo'), 'import-check');
    writeFileSync(
      path.join(dir, 'check.mjs'),
      "const m = await import('agentctl/adk'); console.log(JSON.stringify(Object.keys(m).sort()), typeof m.adk.messages.send);\n",
    );
    const { stdout } = await execa(process.execPath, ['check.mjs'], { cwd: dir });
    expect(stdout).toBe(
      `${JSON.stringify(['Adk', 'AdkError', 'AgentServer', 'AgentStartError', 'AuthenticationError', 'ConflictError', 'MessageStream', 'NotFoundError', 'PayloadTooLargeError', 'PermissionDeniedError', 'RateLimitedError', 'STREAM_FLUSH_INTERVAL_MS', 'ServerError', 'TaskContext', 'TurnInterruptedError', 'UnreachableError', 'ValidationError', 'WorkspaceSyncError', 'adk', 'createAdk', 'readProcessConfig'])} function`,
    );
  });

  it('typechecks the examples against the published declarations', async () => {
    for (const example of ['echo', 'sync-echo', 'streaming']) {
      // In place: the examples use node's own modules, whose types (@types/node) this repository has.
      const dir = path.join(repoRoot, 'examples', example);
      const link = path.join(dir, 'node_modules', 'agentctl');
      if (!existsSync(link)) {
        mkdirSync(path.dirname(link), { recursive: true });
        symlinkSync(repoRoot, link, 'dir');
      }
      const result = await typecheck(dir);
      expect({ example, out: result.stdout, code: result.exitCode }).toEqual({ example, out: '', code: 0 });
    }
  });

  it('rejects handler code that misuses the documented types', async () => {
    const dir = projectCopy(path.join(repoRoot, 'examples/echo'), 'types-misuse');
    writeFileSync(
      path.join(dir, 'src/index.ts'),
      "import { AgentServer } from 'agentctl/adk';\nnew AgentServer({ async onEvent(ctx, event) { await ctx.tracker.update('half', 3); await ctx.messages.send({ type: 'text' }); event.content.text; } });\n",
    );
    const result = await typecheck(dir);
    expect(result.exitCode).toBe(2);
    expect(result.stdout.split('\n').filter((line) => line.startsWith('src/'))).toEqual([
      "src/index.ts(2,72): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.",
      `src/index.ts(2,108): error TS2345: Argument of type '{ type: "text"; }' is not assignable to parameter of type 'string | { type: "text"; text: string; } | { type: "data"; data: Record<string, unknown>; } | { type: "tool_request"; name: string; call_id: string; arguments?: string | undefined; } | { type: "tool_response"; call_id: string; result?: unknown; error?: string | undefined; } | { ...; }'.`,
      `src/index.ts(2,141): error TS2339: Property 'text' does not exist on type '{ type: "text"; text: string; } | { type: "data"; data: Record<string, unknown>; }'.`,
    ]);
  });

  it('typechecks a project written by agentctl init, as written', async () => {
    const result = await runCli(['init', 'fresh-bot', '--no-git', '--json'], { cwd: tmp.dir, env: { AGENTCTL_CONFIG_DIR: path.join(tmp.dir, 'config') } });
    expect(result.code).toBe(0);
    const checked = await typecheck(path.join(tmp.dir, 'fresh-bot'));
    expect({ out: checked.stdout, code: checked.exitCode }).toEqual({ out: '', code: 0 });
  });
});
