// A transaction PostgreSQL aborted to break a deadlock or a serialization conflict changed
// nothing: the handler runs again, a bounded number of times, before the client hears a 503.
import type { FastifyReply } from 'fastify';
import { isSerializationFailure } from '../store/sql.js';

/** Whole handler runs tried in the server on a serialization failure or deadlock. */
export const TRANSACTION_ATTEMPTS = 4;

export async function withTransactionRetries<T>(reply: FastifyReply, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      // A handler that already answered (a stream) cannot start over.
      if (!isSerializationFailure(error) || attempt >= TRANSACTION_ATTEMPTS || reply.sent) throw error;
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20 * attempt));
    }
  }
}
