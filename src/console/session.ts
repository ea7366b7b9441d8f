import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ConsoleSession } from '../contract/console.js';

export interface SessionContext {
  session: ConsoleSession;
  /** Called when the API says the session is over (401): back to the sign-in page. */
  ended: (reason?: string) => void;
}
export const Session = createContext<SessionContext>(null as unknown as SessionContext);
export const useSession = () => useContext(Session);

export const BASE = '/console';
