#!/usr/bin/env node
// Launcher: Node's compile cache makes every start after the first skip parsing the bundle.
import module from 'node:module';

module.enableCompileCache?.();
await import('../dist/agentctl.js');
