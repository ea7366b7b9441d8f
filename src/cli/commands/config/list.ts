import { defineCommand } from '../../command.js';
import { table } from '../../output/view.js';

interface Row {
  name: string;
  current: boolean;
  base_url: string | null;
  api_key_prefix: string | null;
}

export default defineCommand({
  path: ['config', 'list'],
  summary: 'List profiles (keys shown by prefix only)',
  examples: ['agentctl config list', 'agentctl config list --json'],
  handler: async (ctx) => {
    const store = ctx.config();
    const rows: Row[] = Object.entries(store.profiles()).map(([name, p]) => ({
      name,
      current: name === store.currentProfile,
      base_url: p.base_url ?? null,
      api_key_prefix: p.api_key ? p.api_key.slice(0, 12) : null,
    }));
    return {
      json: { config_file: store.path, current_profile: store.currentProfile ?? null, profiles: rows },
      view: table<Row>(
        [
          { header: '', value: (r) => (r.current ? '*' : '') },
          { header: 'PROFILE', value: (r) => r.name },
          { header: 'BASE URL', value: (r) => r.base_url },
          { header: 'KEY', value: (r) => (r.api_key_prefix ? `${r.api_key_prefix}…` : null) },
        ],
        rows,
        `No profiles yet (${store.path}). Start a local server (agentctl server start) or run agentctl auth login.`,
      ),
    };
  },
});
