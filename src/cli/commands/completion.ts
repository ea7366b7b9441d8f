import type { Handler } from '../command.js';
import { completionScript, type Shell } from '../completion.js';
import { text } from '../output/view.js';

/** Prints the script as text even under --json: it is meant to be sourced by a shell. */
const completion: Handler = async (_ctx, [shell]) => ({ view: text(completionScript(shell as Shell)), json: undefined });
export default completion;
