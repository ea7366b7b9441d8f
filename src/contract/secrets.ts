import { z } from 'zod';
import { Timestamp } from './common.js';
import { SECRET_NAME_MAX, SECRET_NAME_PATTERN, SECRET_SCOPES } from './enums.js';

/** An agent secret as every answer shows it: its name and scope, never its value. */
export const AgentSecret = z
  .object({
    id: z.string(),
    agent_id: z.string(),
    name: z.string(),
    /** `agent`: every version of the agent; `environment`: versions whose branch falls in `environment`. */
    scope: z.enum(SECRET_SCOPES),
    /** The environment's name for an environment-scoped secret, else null. */
    environment: z.string().nullable(),
    /** Grows by one on every `set`: replicas restart when the secrets they were started with change. */
    revision: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'AgentSecret' });
export type AgentSecret = z.infer<typeof AgentSecret>;

export const AgentSecretList = z.object({ secrets: z.array(AgentSecret), total: z.number().int() }).meta({ id: 'AgentSecretList' });

/** The secret's name in a path: an environment variable name. */
export const SecretName = z
  .string()
  .max(SECRET_NAME_MAX)
  .regex(SECRET_NAME_PATTERN, 'an environment variable name: letters, digits and `_`, not starting with a digit');

/**
 * `PUT .../secrets/{name}`: the value (at most SECRET_VALUE_MAX_BYTES bytes of UTF-8: 413 above,
 * checked by the server, not here, so the answer says 413) and, optionally, the environment it is for.
 */
export const SetSecretRequest = z
  .object({
    value: z.string().min(1),
    environment: z.string().min(1).max(63).nullable().optional(),
  })
  .meta({ id: 'SetSecretRequest' });

export const SecretScopeQuery = z.object({ environment: z.string().min(1).max(63).optional() });
