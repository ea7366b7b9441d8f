// The console's one client: the same typed client as the CLI (src/client), over the browser's fetch
// with the session cookie (same origin only) instead of an API key. The session's CSRF token,
// known after sign-in, goes with every request; the server checks it on those that change something.
import { ApiRequestError, createClient, NotServiceAnswerError, type StreamOpener, type Transport, UnreachableError } from '../client/index.js';
import { fetchStreamOpener, fetchTransport } from '../client/fetch-transport.js';
import { CSRF_HEADER } from '../contract/console-constants.js';

let csrfToken = '';
export const setCsrfToken = (token: string) => {
  csrfToken = token;
};
const headers = (): Record<string, string> => (csrfToken ? { [CSRF_HEADER]: csrfToken } : {});

let onSessionEnded: (reason: string) => void = () => undefined;
/** Who is told when an answer says the session is over (401: signed out elsewhere, key revoked or expired). */
export const whenSessionEnds = (listener: (reason: string) => void) => {
  onSessionEnded = listener;
};
/** A 401 while signed in (a CSRF token is held only then) ends the session, whichever view asked. */
const noticeEnd = (status: number, text: () => string) => {
  if (status !== 401 || !csrfToken) return;
  let reason = 'Your session has ended.';
  try {
    reason = JSON.parse(text()).detail ?? reason;
  } catch {
    // not the service's JSON: the general sentence
  }
  onSessionEnded(reason);
};

const transport: Transport = async (url, request) => {
  const response = await fetchTransport({ headers })(url, request);
  noticeEnd(response.status, () => response.text);
  return response;
};
const opener = fetchStreamOpener({ headers });
const streamOpener: StreamOpener = async (url, init) => {
  const opened = await opener(url, init);
  if (opened.status === 401) noticeEnd(401, () => '');
  return opened;
};

export const api = createClient({
  baseUrl: location.origin,
  transport,
  streamOpener,
  // Answers are checked with the contract's generated shapes: no zod in the page's download.
  shortLived: true,
  retries: 2,
});

export type ConsoleApi = typeof api;

/** An API failure in words: what happened, and what to do about it. */
export function describeError(error: unknown): { title: string; detail: string; hint?: string; status?: number } {
  if (error instanceof ApiRequestError) {
    const hints: Record<number, string> = {
      401: 'Your session has ended: sign in again.',
      403: 'Your API key may see this but not change it. Ask an org admin for a key with a wider scope.',
      404: 'It does not exist, or your API key may not see it.',
      409: 'It changed meanwhile: reload and try again.',
      422: 'Check the values you entered.',
      429: `Too many requests: wait ${error.retryAfter ?? 'a few'} seconds and try again.`,
      503: 'The server is busy or starting: try again shortly.',
    };
    return { title: `${error.status} ${error.code.replaceAll('_', ' ')}`, detail: error.message, hint: hints[error.status], status: error.status };
  }
  if (error instanceof UnreachableError)
    return { title: 'The server cannot be reached', detail: error.message, hint: 'Check that `agentctl server` is running, then reload.' };
  if (error instanceof NotServiceAnswerError)
    return { title: 'An answer that is not the service’s', detail: error.message, hint: 'A proxy in between may be failing.' };
  return { title: 'Something went wrong', detail: error instanceof Error ? error.message : String(error) };
}
