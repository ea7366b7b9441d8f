import type { CliIO } from '../context.js';
import { InterruptedError } from '../errors.js';

export interface Choice<T> {
  name: string;
  value: T;
  description?: string;
  checked?: boolean;
  disabled?: boolean | string;
}

/** The prompts the CLI uses; the wizard steps take this so tests can script the answers. */
export interface Prompter {
  select<T>(options: { message: string; choices: Choice<T>[]; default?: T }): Promise<T>;
  checkbox<T>(options: { message: string; choices: Choice<T>[]; required?: boolean }): Promise<T[]>;
  input(options: { message: string; default?: string; required?: boolean; validate?: (value: string) => true | string }): Promise<string>;
  password(options: { message: string }): Promise<string>;
  confirm(options: { message: string; default?: boolean }): Promise<boolean>;
  /** A line between prompts (why a step is skipped), on the prompts' stream. */
  note(message: string): void;
}

/**
 * @inquirer/prompts on the given terminal; prompts are written to stderr so stdout stays data. An
 * answered prompt is marked with `done`, the CLI's one success mark (not inquirer's own ✔).
 */
export async function inquirerPrompter(io: CliIO, signal: AbortSignal, done: string): Promise<Prompter> {
  const inquirer = await import('@inquirer/prompts');
  const theme = { prefix: { done } };
  const context = { input: io.stdin as NodeJS.ReadableStream, output: io.stderr as NodeJS.WritableStream, signal, clearPromptOnDone: false };
  // Ctrl-C inside a prompt (ExitPromptError) or our own abort (AbortPromptError) both mean "interrupted".
  const guard = async <T>(ask: () => Promise<T>): Promise<T> => {
    try {
      return await ask();
    } catch (error) {
      const name = (error as Error)?.name;
      if (name === 'ExitPromptError' || name === 'AbortPromptError' || name === 'CancelPromptError') throw new InterruptedError();
      throw error;
    }
  };
  return {
    select: (o) => guard(() => inquirer.select({ message: o.message, choices: o.choices, default: o.default, pageSize: 12, theme }, context)),
    checkbox: (o) => guard(() => inquirer.checkbox({ message: o.message, choices: o.choices, required: o.required, pageSize: 12, theme }, context)),
    input: (o) => guard(() => inquirer.input({ message: o.message, default: o.default, required: o.required, validate: o.validate, theme }, context)),
    password: (o) => guard(() => inquirer.password({ message: o.message, mask: '*', theme }, context)),
    confirm: (o) => guard(() => inquirer.confirm({ message: o.message, default: o.default, theme }, context)),
    note: (message) => void io.stderr.write(`${message}\n`),
  };
}
