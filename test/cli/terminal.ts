// Real pseudo-terminals through tmux, for what only a terminal shows: prompts, shell completion.
import path from 'node:path';
import { execa } from 'execa';

export const hasTmux = await execa('tmux', ['-V'], { reject: false }).then(
  (r) => r.exitCode === 0,
  () => false,
);

/** The CLI from source, as `agentctl` runs it. */
export const ENTRY = path.resolve('src/cli/main.ts');

/** One tmux session running a command in a real pseudo-terminal. */
export class Terminal {
  constructor(readonly session: string) {}

  static async start(command: string): Promise<Terminal> {
    const session = `agentctl-tty-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    await execa('tmux', ['new-session', '-d', '-s', session, '-x', '160', '-y', '50', command]);
    // Keep the pane after the command exits, so its last output can still be read.
    await execa('tmux', ['set-option', '-t', session, 'remain-on-exit', 'on']);
    return new Terminal(session);
  }

  async screen(): Promise<string> {
    return (await execa('tmux', ['capture-pane', '-p', '-J', '-S', '-', '-t', this.session])).stdout;
  }

  /** Waits until the screen shows `text`, then returns the screen. */
  async waitFor(text: string | RegExp, seconds = 30): Promise<string> {
    const deadline = Date.now() + seconds * 1000;
    for (;;) {
      const screen = await this.screen();
      if (typeof text === 'string' ? screen.includes(text) : text.test(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${text}; screen:\n${screen}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async keys(...keys: string[]): Promise<void> {
    for (const key of keys) {
      await execa('tmux', ['send-keys', '-t', this.session, key]);
      await new Promise((r) => setTimeout(r, 80));
    }
  }

  async type(text: string): Promise<void> {
    await execa('tmux', ['send-keys', '-t', this.session, '-l', '--', text]);
  }

  async close(): Promise<void> {
    await execa('tmux', ['kill-session', '-t', this.session], { reject: false });
  }
}
