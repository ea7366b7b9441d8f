/**
 * `agentctl/adk`: the runtime toolkit for agent code (README "Writing agents: the ADK"). Imports only the client,
 * the contract and the sync module: nothing of the CLI or the server.
 */
export { Adk, adk, createAdk, type AdkOptions, type EventList, type JsonObject, type ListPage, type MessageList, type TrackerList } from './adk.js';
export type {
  Agent,
  Content,
  ContentInput,
  Event,
  Message,
  MessageContent,
  MessageContentInput,
  State,
  Task,
  Tracker,
  SyncOptions,
  SyncResult,
  SystemFolderType,
} from './adk.js';
export { AgentServer, AgentStartError, WorkspaceSyncError, type AgentHandlers, type AgentServerOptions, type MigrationVersion } from './server.js';
export { TaskContext } from './context.js';
export type { LogApi, LogFields, SpanAttributes, SpanAttributeValue, SpanHandle, TraceApi } from './trace.js';
export { MessageStream, STREAM_FLUSH_INTERVAL_MS, type MessageStreamOptions, type StreamKind } from './stream.js';
export {
  AdkError,
  AuthenticationError,
  ConflictError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitedError,
  ServerError,
  TurnInterruptedError,
  UnreachableError,
  ValidationError,
} from './errors.js';
export { readProcessConfig, type ProcessConfig } from './config.js';
export type { AcpAgentRef } from '../contract/acp.js';
