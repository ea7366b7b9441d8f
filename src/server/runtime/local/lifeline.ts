// Shared with `agentctl dev` (src/agent-process): its agent process ends with it the same way.
export { LIFELINE_FD, LIFELINE_GRACE_MS, LIFELINE_SOURCE } from '../../../agent-process/lifeline.js';
