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
    description: 'Namespace admins deploy new agents and create projects; agent and project editors deploy, roll back, migrate and change files.',
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
    // The spec's role table: "An agent viewer scope gives read access and the ability to run tasks."
    description: 'Viewers read agents and projects, and agent viewers can also run tasks (create tasks, send events), as the role table grants.',
    scopes: [
      { resource_type: 'agent', role: 'viewer' },
      { resource_type: 'project', role: 'viewer' },
    ],
  },
  {
    id: 'agent-runner',
    name: 'Agent Runner',
    use: 'Run tasks, manage files',
    description: 'Agent viewers read agents and run tasks; project editors create and change files.',
    scopes: [
      { resource_type: 'agent', role: 'viewer' },
      { resource_type: 'project', role: 'editor' },
    ],
  },
  { id: 'custom', name: 'Custom', use: 'Manual scope configuration', description: 'No scopes filled in: add each one yourself.', scopes: [] },
];
