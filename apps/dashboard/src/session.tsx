import type { Session } from '@aop/sdk';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from 'react';
import { client, request } from './api.js';

type SessionUser = NonNullable<Session['user']>;

interface SessionState {
  /** undefined while the first check runs; null when signed out. */
  user: SessionUser | null | undefined;
  refresh: () => Promise<SessionUser | null>;
  signIn: (email: string, password: string) => Promise<void>;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionState | null>(null);

/** The signed-in person, from `GET /api/auth/session`; the session itself lives in an httpOnly cookie. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<SessionUser | null | undefined>(undefined);

  const refresh = useCallback(async () => {
    const { user: current } = await request(client.GET('/api/auth/session')).catch(() => ({ user: null }));
    setUser(current);
    return current;
  }, []);

  const signIn = useCallback(
    async (email: string, password: string) => {
      // The client fetches a CSRF token for the attempt first (one token is good for one attempt).
      await request(client.POST('/api/auth/login', { body: { email, password } }));
      await refresh();
    },
    [refresh],
  );

  const signOut = useCallback(async () => {
    await request(client.POST('/api/auth/signout'));
    setUser(null);
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  return <SessionContext.Provider value={{ user, refresh, signIn, signOut }}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionState {
  const state = useContext(SessionContext);
  if (!state) throw new Error('useSession outside SessionProvider');
  return state;
}
