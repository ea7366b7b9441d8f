import { z } from 'zod';
import { ErrorBody, JsonObject, QueryInt, Timestamp } from './common.js';
import { MAX_REPORTED_SPANS, SpanInput } from './traces.js';
import type { Task } from './resources.js';
import {
  ACP_METHODS,
  EVENT_LIST_LIMIT,
  MAX_COMPLETIONS_PER_REQUEST,
  MESSAGE_LIST_LIMIT,
  MESSAGE_TEXT_MAX,
  STREAM_RECORD_KINDS,
  STREAMED_FIELDS,
} from './enums.js';

// ---- content ------------------------------------------------------------------------------------

export const TextPart = z.object({ type: z.literal('text'), text: z.string().max(MESSAGE_TEXT_MAX) }).meta({ id: 'TextPart' });
export const DataPart = z.object({ type: z.literal('data'), data: JsonObject }).meta({ id: 'DataPart' });
/** A tool call the agent makes; `arguments` is the JSON text as the model writes it (streamed as deltas). */
export const ToolRequestPart = z
  .object({
    type: z.literal('tool_request'),
    name: z.string().min(1).max(200),
    call_id: z.string().min(1).max(200),
    arguments: z.string().max(MESSAGE_TEXT_MAX).default(''),
  })
  .meta({ id: 'ToolRequestPart' });
/** The answer to a tool_request of the same `call_id`: a result, or an error. */
export const ToolResponsePart = z
  .object({
    type: z.literal('tool_response'),
    call_id: z.string().min(1).max(200),
    result: z.unknown().optional(),
    error: z.string().max(10_000).optional(),
  })
  .meta({ id: 'ToolResponsePart' });
/** A summary of the model's reasoning (streamed as deltas like text). */
export const ReasoningPart = z.object({ type: z.literal('reasoning'), summary: z.string().max(MESSAGE_TEXT_MAX) }).meta({ id: 'ReasoningPart' });
/** What events carry (and sync agents receive): a TextPart (markdown allowed) or a DataPart (structured UIs). */
export const Content = z.discriminatedUnion('type', [TextPart, DataPart]).meta({ id: 'Content' });
export type Content = z.infer<typeof Content>;
/** What messages carry: an event's parts, and the parts an LLM loop produces. */
export const MessageContent = z
  .discriminatedUnion('type', [TextPart, DataPart, ToolRequestPart, ToolResponsePart, ReasoningPart])
  .meta({ id: 'MessageContent' });
export type MessageContent = z.infer<typeof MessageContent>;
/**
 * The content kinds a delta can extend, and the field it appends to. A delta to any other kind is
 * refused (409 `message_not_streamable`).
 */
export { STREAMED_FIELDS };
export type StreamableType = keyof typeof STREAMED_FIELDS;
export const isStreamable = (type: string): type is StreamableType => Object.hasOwn(STREAMED_FIELDS, type);
/** What a client may send: a bare string is stored as a TextPart. */
export const ContentInput = z
  .union([z.string().max(MESSAGE_TEXT_MAX), Content])
  .transform((c): Content => (typeof c === 'string' ? { type: 'text', text: c } : c));
export type ContentInput = z.input<typeof ContentInput>;
export const MessageContentInput = z
  .union([z.string().max(MESSAGE_TEXT_MAX), MessageContent])
  .transform((c): MessageContent => (typeof c === 'string' ? { type: 'text', text: c } : c));
export type MessageContentInput = z.input<typeof MessageContentInput>;

// ---- records ------------------------------------------------------------------------------------

/** Input to an agent. `sequence_id` is the task's one order across events, messages and status. */
export const Event = z
  .object({
    id: z.string(),
    task_id: z.string(),
    agent_id: z.string(),
    sequence_id: z.number().int(),
    content: Content,
    created_at: Timestamp,
  })
  .meta({ id: 'Event' });
export type Event = z.infer<typeof Event>;

export const MESSAGE_AUTHORS = ['agent', 'user'] as const;
export const MessageAuthor = z.enum(MESSAGE_AUTHORS);
/** `IN_PROGRESS` takes deltas; the other three are finished (`INTERRUPTED`: its writer stopped or went away). */
export const STREAMING_STATUSES = ['IN_PROGRESS', 'DONE', 'INTERRUPTED', 'FAILED'] as const;
export type StreamingStatus = (typeof STREAMING_STATUSES)[number];
export const StreamingStatus = z.enum(STREAMING_STATUSES);

/**
 * The transcript. `sequence_id` is where the message was created in the task's order; an update
 * (PUT) takes a new sequence number, shown in the stream as a `message_update` record and here as
 * `updated_sequence_id`.
 */
export const Message = z
  .object({
    id: z.string(),
    task_id: z.string(),
    author: MessageAuthor,
    content: MessageContent,
    streaming_status: StreamingStatus.nullable(),
    /** Why a stream ended FAILED or INTERRUPTED (the writer's reason), else null. */
    streaming_error: z.string().nullable(),
    sequence_id: z.number().int(),
    updated_sequence_id: z.number().int(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Message' });
export type Message = z.infer<typeof Message>;

/** One per (task, agent), created with the task. */
export const Tracker = z
  .object({
    id: z.string(),
    task_id: z.string(),
    agent_id: z.string(),
    /** Free text set by the agent (`working`, `waiting for review`); `idle` when created. */
    status: z.string(),
    status_message: z.string().nullable(),
    progress: z.number().min(0).max(100).nullable(),
    last_processed_event_id: z.string().nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Tracker' });
export type Tracker = z.infer<typeof Tracker>;

// ---- requests -----------------------------------------------------------------------------------

const afterSequence = { after_sequence_id: QueryInt(0).default(0) };

export const CreateEventRequest = z.object({ content: ContentInput });
export const ListEventsQuery = z.object({
  task_id: z.string().min(1),
  ...afterSequence,
  limit: QueryInt(EVENT_LIST_LIMIT.min, EVENT_LIST_LIMIT.max).default(EVENT_LIST_LIMIT.default),
});
export const EventList = z.object({ events: z.array(Event), has_more: z.boolean() });

export const CreateMessageRequest = z.object({
  task_id: z.string().min(1),
  content: MessageContentInput,
  author: MessageAuthor.default('agent'),
  streaming_status: StreamingStatus.nullable().default(null),
});
export const UpdateMessageRequest = z.object({
  content: MessageContentInput.optional(),
  streaming_status: StreamingStatus.nullable().optional(),
  /** With `FAILED` or `INTERRUPTED`: why. */
  streaming_error: z.string().min(1).max(10_000).optional(),
});
/**
 * One delta appended to an IN_PROGRESS message's streamed field (text, reasoning summary, tool
 * arguments) at `offset`, the field's length (in characters: Unicode code points) the writer
 * expects before it. The offset makes the request idempotent without an Idempotency-Key: it is
 * appended only at the field's end; the same delta already at that offset is a retry and gets the
 * first answer again; any other offset is 409 `delta_offset_mismatch`. Size is checked in the
 * domain (413), not here, so a huge delta is not a 400.
 */
export const AppendMessageDeltaRequest = z.object({ delta: z.string().min(1), offset: z.number().int().min(0) });
/** What a delta became: its stream item's `sequence_id` and where it starts in the field (`offset`, in characters: Unicode code points). */
export const MessageDelta = z
  .object({
    message_id: z.string(),
    task_id: z.string(),
    sequence_id: z.number().int(),
    offset: z.number().int(),
    delta: z.string(),
  })
  .meta({ id: 'MessageDelta' });
export type MessageDelta = z.infer<typeof MessageDelta>;

export const ListMessagesQuery = z.object({
  task_id: z.string().min(1),
  ...afterSequence,
  limit: QueryInt(MESSAGE_LIST_LIMIT.min, MESSAGE_LIST_LIMIT.max).default(MESSAGE_LIST_LIMIT.default),
});
export const MessageList = z.object({ messages: z.array(Message), has_more: z.boolean() });

export const TrackerQuery = z.object({ task_id: z.string().min(1).optional(), agent_id: z.string().min(1).optional() });
export const TrackerList = z.object({ trackers: z.array(Tracker), total: z.number().int() });
export const UpdateTrackerRequest = z.object({
  status: z.string().min(1).max(100).optional(),
  status_message: z.string().max(10_000).nullable().optional(),
  progress: z.number().min(0).max(100).nullable().optional(),
  last_processed_event_id: z.string().min(1).optional(),
});

/** A handler that threw, reported by the agent; recorded as an agent message with a DataPart `{handler_error: ...}`. */
export const HandlerErrorRequest = z.object({
  handler: z.enum(['onCreate', 'onEvent', 'onCancel', 'onMessage', 'onMigrate']),
  message: z.string().min(1).max(10_000),
  event_id: z.string().min(1).nullable().default(null),
});

// ---- registration with a one-time token (README "Delivery to agents, in short") ------------------------------------

export const RegistrationTokenResponse = z.object({ registration_token: z.string(), expires_at: Timestamp });
export const SigningSecretResponse = z.object({ signing_secret: z.string() });

// ---- deliveries: the completion lease (README "Delivery to agents, in short") ------------

/**
 * A delivery's life: `pending` (waiting, or backing off), `in_flight` (a dispatcher is sending it),
 * `leased` (an async agent acknowledged it and runs its handler: the task's next delivery waits until
 * the agent reports completion, its replica goes, or the lease runs out), then `done` or `failed`.
 */
export const DELIVERY_STATUSES = ['pending', 'in_flight', 'leased', 'done', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
/** Statuses that hold up the task's later deliveries (one in flight per task, in order). */
export const OPEN_DELIVERY_STATUSES = ['pending', 'in_flight', 'leased'] as const satisfies readonly DeliveryStatus[];

/** The JSON-RPC id of a delivery (a positive integer, as text). */
export const DeliveryId = z.string().regex(/^[1-9][0-9]{0,17}$/, 'must be a delivery id: the JSON-RPC id of the delivery');

export const Delivery = z.object({
  id: z.string(),
  task_id: z.string(),
  method: z.enum(ACP_METHODS),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  /** While `leased`: when it is delivered again unless the agent completes or renews it. */
  lease_expires_at: Timestamp.nullable(),
});
export type Delivery = z.infer<typeof Delivery>;

/**
 * A deferred delivery whose handler finished, as the agent reports it: in `POST /deliveries/complete`,
 * or carried in its answer to a later delivery (acp.ts `AcpResult.completed`).
 */
export const DeliveryCompletionReport = z.object({ id: DeliveryId, spans: z.array(SpanInput).max(MAX_REPORTED_SPANS).optional() });

/**
 * `POST /deliveries/complete`: several deferred deliveries whose handlers finished, each as
 * `POST /deliveries/{id}/complete` would report it (its id, and its handler's spans if any). The ADK
 * sends those that finished while its previous report was on its way, in one request.
 */
export const CompleteDeliveriesRequest = z.object({
  deliveries: z.array(DeliveryCompletionReport).min(1).max(MAX_COMPLETIONS_PER_REQUEST),
});
export type CompleteDeliveriesRequest = z.input<typeof CompleteDeliveriesRequest>;

/**
 * Each reported delivery answered on its own, in the request's order: `status` is what
 * `POST /deliveries/{id}/complete` would have answered (200 with `delivery`, or an error status with
 * `error`, the usual `{detail, code}`). One delivery refused does not refuse the others.
 */
export const CompleteDeliveriesResponse = z.object({
  results: z.array(
    z.object({
      id: z.string(),
      status: z.number().int(),
      delivery: Delivery.nullable(),
      error: ErrorBody.nullable(),
    }),
  ),
});
export type CompleteDeliveriesResponse = z.infer<typeof CompleteDeliveriesResponse>;

/**
 * One delivery of a dev version, as `GET /versions/{id}/deliveries/stream` sends it (`event:
 * delivery`, `data:` this): the exact JSON-RPC body and its signature, which `agentctl dev` POSTs
 * unchanged to the agent's `/api` as the dispatcher would, then reports the answer with `claim`.
 */
export const PulledDelivery = z
  .object({
    delivery_id: DeliveryId,
    task_id: z.string(),
    method: z.enum(ACP_METHODS),
    attempt: z.number().int(),
    /** Who holds the claim: the stream that sent it. The answer names it; a stale claim's answer changes nothing. */
    claim: z.string(),
    /** The JSON-RPC request, exactly as signed. */
    body: z.string(),
    /** `X-Agentctl-Signature` of `body`. */
    signature: z.string(),
  })
  .meta({ id: 'PulledDelivery' });
export type PulledDelivery = z.infer<typeof PulledDelivery>;

/**
 * `POST /deliveries/{id}/answer`: what the agent answered a pulled delivery (HTTP status and body),
 * or `error` when it could not be reached; the server settles it as the dispatcher settles a push.
 */
export const DeliveryAnswerRequest = z
  .object({
    claim: z.string().min(1).max(100),
    status_code: z.number().int().min(100).max(599).optional(),
    body: z
      .string()
      .max(1024 * 1024)
      .optional(),
    error: z.string().min(1).max(1000).optional(),
  })
  .refine((a) => (a.status_code === undefined) !== (a.error === undefined), { message: 'give status_code (with body) or error, one of them' });
export type DeliveryAnswerRequest = z.infer<typeof DeliveryAnswerRequest>;
// ---- turn control: interrupt, and whether the agent is busy (README "Interrupt and double-texting") ----

/**
 * `GET /tasks/{id}/turn`: whether the task's agent has a turn open (a task/create, event/send or
 * task/cancel delivery pending, in flight or being handled). `busy` false: the agent is idle, and
 * everything it wrote for the turns so far is on the stream up to `last_sequence_id`.
 */
export const TaskTurn = z
  .object({
    task_id: z.string(),
    busy: z.boolean(),
    /** The delivery whose handler runs (in flight or leased), if any. */
    running_delivery_id: z.string().nullable(),
    /** Turns waiting behind it. */
    queued: z.number().int(),
    /** The task's stream position when this was read. */
    last_sequence_id: z.number().int(),
  })
  .meta({ id: 'TaskTurn' });
export type TaskTurn = z.infer<typeof TaskTurn>;

/** `POST /tasks/{id}/interrupt`: what it did; `interrupted` false when no turn was running (nothing to do). */
export const InterruptResult = z
  .object({
    task_id: z.string(),
    interrupted: z.boolean(),
    /** The running turn's delivery the interrupt is for; null when there was none. */
    turn_delivery_id: z.string().nullable(),
    detail: z.string(),
  })
  .meta({ id: 'InterruptResult' });
export type InterruptResult = z.infer<typeof InterruptResult>;

// ---- the stream -----------------------------------------------------------------------------------

/** SSE `event:` names of `GET /tasks/{id}/stream`; `id:` is the sequence_id, `data:` the record. */
export { STREAM_RECORD_KINDS };
export type StreamRecordKind = (typeof STREAM_RECORD_KINDS)[number];
export type StreamRecord =
  | { kind: 'event'; sequence_id: number; data: Event }
  | { kind: 'message' | 'message_update'; sequence_id: number; data: Message }
  | { kind: 'message_delta'; sequence_id: number; data: MessageDelta }
  | { kind: 'task'; sequence_id: number; data: Task }
  | { kind: 'tracker'; sequence_id: number; data: Tracker };
export const StreamQuery = z.object({ ...afterSequence });

/**
 * `GET /tasks/{id}/conversation`: the conversation read backwards a page at a time, for a reader
 * that shows the end first (the console): the newest `limit` items before `before_sequence_id`.
 */
export const ConversationPageQuery = z.object({
  before_sequence_id: QueryInt(1).optional(),
  limit: QueryInt(MESSAGE_LIST_LIMIT.min, MESSAGE_LIST_LIMIT.max).default(MESSAGE_LIST_LIMIT.default),
});
