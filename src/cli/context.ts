import type { Chalk, ChalkInstance } from 'chalk';
import type { ApiResponse, CallOptions, Client } from '../client/index.js';
import type { EndpointInput, EndpointName, EndpointOutput } from '../contract/endpoints.js';
import { configDir, ConfigStore, resolveCredentials, type Credentials, type Env } from './config.js';
import { CliError, InterruptedError, unknownProfile } from './errors.js';
import { ExitCode } from './exit-codes.js';
import type { Prompter } from './prompts/prompter.js';
import { VERSION } from './version.js';
import { formatClientTraceState, formatTraceparent, newSpanId, newTraceId } from '../contract/trace-context.js';

export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Everything the CLI touches outside itself, so a test can run it in-process. */
export interface CliIO {
  stdout: OutputStream;
  stderr: OutputStream;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Env;
  cwd: string;
}

export interface GlobalOptions {
  json: boolean;
  /** `--json id,name`: only these fields of the answer (of each record of a list). */
  jsonFields?: string[];
  /** `--jq EXPR`: the answer through jq. */
  jq?: string;
  /** Ids beside names in tables and records (`--wide`). */
  wide: boolean;
  profile?: string;
  baseUrl?: string;
  apiKey?: string;
  color: boolean;
  quiet: boolean;
  debug: boolean;
  nonInteractive: boolean;
  yes: boolean;
}

export interface Spinner {
  update(text: string): void;
  succeed(text: string): void;
  fail(text: string): void;
  stop(): void;
}

/** The one mark of success, for spinners and plain lines alike. */
export const SUCCESS_GLYPH = '✓';

/**
 * chalk at colour level 0 (every style hands its text back unchanged) without loading chalk, for
 * `--json` runs: loading it is about a twentieth of such a run, and they print no colour.
 */
const PLAIN: ChalkInstance = new Proxy(Object.assign((...text: unknown[]) => text.join(' '), { level: 0 }) as unknown as ChalkInstance, {
  get: (target, key) => (key === 'level' ? 0 : typeof key === 'string' ? PLAIN : Reflect.get(target, key)),
});

const truthy = (value: string | undefined) => value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';

export class CommandContext {
  private colours?: ChalkInstance;
  private store?: ConfigStore;
  private clientPromise?: Promise<Client>;
  private prompter?: Promise<Prompter>;

  /**
   * The command's trace (README "Traces"): one new W3C trace per command, its id made here with the
   * platform's crypto (no OpenTelemetry SDK to load); every request carries it, `--debug` and error
   * output show it. Set once the command makes its client.
   */
  trace?: { traceId: string; spanId: string };

  private constructor(
    readonly io: CliIO,
    readonly globals: GlobalOptions,
    readonly signal: AbortSignal,
    private readonly chalkClass: typeof Chalk | undefined,
    /** The command, for its span's name (`tasks send`). */
    readonly commandPath: readonly string[] = [],
  ) {}

  /** A context for one run. chalk is loaded for people, not under `--json`, which prints no colour. */
  static async create(io: CliIO, globals: GlobalOptions, signal: AbortSignal, commandPath: readonly string[] = []): Promise<CommandContext> {
    return new CommandContext(io, globals, signal, globals.json ? undefined : (await import('chalk')).Chalk, commandPath);
  }

  /** Colours when stdout or stderr is a terminal; decided on first use, as it reads stderr (main.ts). */
  get chalk(): ChalkInstance {
    if (!this.colours) {
      const { globals, io, chalkClass } = this;
      if (!chalkClass) return (this.colours = PLAIN);
      const colour = globals.color && !('NO_COLOR' in io.env && io.env.NO_COLOR !== '') && (io.stdout.isTTY || io.stderr.isTTY || truthy(io.env.FORCE_COLOR));
      this.colours = new chalkClass({ level: colour ? 1 : 0 });
    }
    return this.colours;
  }

  get env(): Env {
    return this.io.env;
  }

  /** The one rule for prompting: stdin and stdout are terminals and none of CI, --non-interactive, --json. */
  canPrompt(): boolean {
    return Boolean(this.io.stdin.isTTY && this.io.stdout.isTTY) && !truthy(this.io.env.CI) && !this.globals.nonInteractive && !this.globals.json;
  }

  /** People-facing notes go to stderr, never under --json or --quiet. */
  get chatty(): boolean {
    return !this.globals.json && !this.globals.quiet;
  }

  info(message: string): void {
    if (this.chatty) this.io.stderr.write(`${message}\n`);
  }

  success(message: string): void {
    if (this.chatty) this.io.stderr.write(`${this.chalk.green(SUCCESS_GLYPH)} ${message}\n`);
  }

  /** Warnings still show under --quiet (they matter), but never under --json. */
  warn(message: string): void {
    if (!this.globals.json) this.io.stderr.write(`${this.chalk.yellow('warning:')} ${message}\n`);
  }

  config(): ConfigStore {
    if (!this.store) {
      this.store = new ConfigStore(configDir(this.io.env));
      if (this.store.repairedMode !== undefined) {
        this.warn(`${this.store.path} was readable by others (mode ${this.store.repairedMode.toString(8)}); set it to 600`);
      }
    }
    return this.store;
  }

  /**
   * The base URL and key in effect. A profile named by --profile or AGENTCTL_PROFILE must exist
   * (a typo would otherwise quietly fall back to the default URL and no key), except for the
   * commands that create one (`creating`: auth login, config set).
   */
  credentials(options: { creating?: boolean } = {}): Credentials {
    const credentials = resolveCredentials(
      { profile: this.globals.profile, baseUrl: this.globals.baseUrl, apiKey: this.globals.apiKey },
      this.io.env,
      this.config(),
    );
    if (!options.creating && (credentials.profileSource === 'flag' || credentials.profileSource === 'env') && !this.config().profile(credentials.profile)) {
      throw unknownProfile(credentials.profile, credentials.profileSource === 'flag' ? '--profile' : 'AGENTCTL_PROFILE', Object.keys(this.config().profiles()));
    }
    return credentials;
  }

  /** A client for the resolved base URL and key; fails with exit 4 when no key is configured. */
  client(options: { requireKey?: boolean } = {}): Promise<Client> {
    return (this.clientPromise ??= this.makeClient(options.requireKey ?? true));
  }

  /** Calls an endpoint with this context's client: how every command talks to the API; `raw` is what `--json` prints. */
  async call<K extends EndpointName>(name: K, input?: EndpointInput<K>, options?: CallOptions): Promise<ApiResponse<EndpointOutput<K>>> {
    return (await this.client()).request(name, input, options);
  }

  private async makeClient(requireKey: boolean): Promise<Client> {
    const credentials = this.credentials();
    if (requireKey && !credentials.apiKey) {
      throw new CliError(`No API key for profile "${credentials.profile}"`, {
        exitCode: ExitCode.auth,
        code: 'no_api_key',
        hint: 'Log in, set AGENTCTL_API_KEY, or pass --api-key.',
        next: 'agentctl auth login',
      });
    }
    const { createClient } = await import('../client/index.js');
    this.trace = { traceId: newTraceId(), spanId: newSpanId() };
    const debug = this.globals.debug ? (line: string) => this.io.stderr.write(`${this.chalk.gray('[debug]')} ${line}\n`) : undefined;
    debug?.(`trace ${this.trace.traceId} (agentctl trace ${this.trace.traceId})`);
    return createClient({
      baseUrl: credentials.baseUrl,
      apiKey: credentials.apiKey,
      signal: this.signal,
      userAgent: `agentctl/${VERSION}`,
      // One or two responses, then exit: loading zod would cost more than the rest of the run.
      shortLived: true,
      timeoutMs: Number(this.io.env.AGENTCTL_TIMEOUT_MS ?? 30_000),
      retries: this.io.env.AGENTCTL_RETRIES !== undefined ? Number(this.io.env.AGENTCTL_RETRIES) : 3,
      debug,
      traceContext: {
        traceparent: formatTraceparent({ ...this.trace, sampled: true }),
        tracestate: formatClientTraceState({ command: this.commandPath.join('-') || 'agentctl', startedAtMs: Date.now() }),
      },
    });
  }

  /** Prompts, loaded on first use; callers check canPrompt() first. */
  prompts(): Promise<Prompter> {
    return (this.prompter ??= import('./prompts/prompter.js').then((m) => m.inquirerPrompter(this.io, this.signal, this.chalk.green(SUCCESS_GLYPH))));
  }

  /** A spinner on stderr when it is a terminal (and not --json/--quiet); otherwise silent. */
  async spinner(text: string): Promise<Spinner> {
    if (!this.io.stderr.isTTY || !this.chatty) {
      return { update() {}, succeed: (t) => this.success(t), fail: (t) => this.info(t), stop() {} };
    }
    const { default: ora } = await import('ora');
    const spinner = ora({ text, stream: this.io.stderr as NodeJS.WritableStream, discardStdin: false, color: 'cyan' }).start();
    return {
      update: (t) => {
        spinner.text = t;
      },
      // Not ora's own ✔: one success glyph everywhere.
      succeed: (t) => spinner.stopAndPersist({ symbol: this.chalk.green(SUCCESS_GLYPH), text: t }),
      fail: (t) => spinner.fail(t),
      stop: () => spinner.stop(),
    };
  }

  /** Resolves after `ms`, or rejects with InterruptedError on Ctrl-C. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const interrupted = () => (this.signal.reason instanceof InterruptedError ? this.signal.reason : new InterruptedError());
      if (this.signal.aborted) return reject(interrupted());
      const onAbort = () => {
        clearTimeout(timer);
        reject(interrupted());
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Standard input as text (for `--file -` or piped data). */
  async readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of this.io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }
}
