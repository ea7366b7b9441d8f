// Shared with `agentctl dev` (src/agent-process): the CLI runs an agent process the way this runtime does.
export { DIAGNOSTIC_LINES, freePort, inheritedEnv, pipeLines, signalGroup } from '../../../agent-process/child-processes.js';
