import { defineCommand } from '../command.js';
import { completionScript, type Shell } from '../completion.js';
import { text } from '../output/view.js';

/** Prints the script as text even under --json: it is meant to be sourced by a shell. */
export default defineCommand({
  path: ['completion'],
  summary: 'Print the completion script for bash, zsh or fish',
  args: [{ name: 'shell', description: 'bash, zsh or fish', required: true, choices: ['bash', 'zsh', 'fish'] }],
  examples: [
    'agentctl completion bash > /etc/bash_completion.d/agentctl',
    'agentctl completion zsh > "${fpath[1]}/_agentctl"',
    'agentctl completion fish > ~/.config/fish/completions/agentctl.fish',
  ],
  handler: async (_ctx, [shell]) => ({ view: text(completionScript(shell as Shell)), json: undefined }),
});
