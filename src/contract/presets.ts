import type { Preset } from './resources.js';

/**
 * The spec's key presets: default scopes the creation wizard fills in (each then needs a resource
 * id, and stays editable). Served by `GET /api_keys/presets`; the CLI imports the same list.
 */
export const PRESETS: readonly Preset[] = [
  {
    id: 'deploy',
    name: 'Deploy',
    use: 'CI/CD and deployments',
    scopes: [
      { resource_type: 'namespace', role: 'admin' },
      { resource_type: 'agent', role: 'editor' },
      { resource_type: 'project', role: 'editor' },
    ],
  },
  {
    id: 'read-only',
    name: 'Read-Only',
    use: 'Monitoring, dashboards',
    scopes: [
      { resource_type: 'agent', role: 'viewer' },
      { resource_type: 'project', role: 'viewer' },
    ],
  },
  {
    id: 'agent-runner',
    name: 'Agent Runner',
    use: 'Run tasks, manage files',
    scopes: [
      { resource_type: 'agent', role: 'viewer' },
      { resource_type: 'project', role: 'editor' },
    ],
  },
  { id: 'custom', name: 'Custom', use: 'Manual scope configuration', scopes: [] },
];
