import type { CsrfToken, Session, SessionUser } from '@aop/web/sign-in/sign-in.schemas';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useState } from 'react';
import { api } from './api.js';

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
    const { user: current } = await api<Session>('/api/auth/session').catch(() => ({ user: null }));
    setUser(current);
    return current;
  }, []);

  const signIn = useCallback(
    async (email: string, password: string) => {
      // A CSRF token is good for one attempt: fetch a fresh one every time.
      const { csrfToken } = await api<CsrfToken>('/api/auth/csrf');
      await api('/api/auth/login', { body: { email, password }, headers: { 'x-csrf-token': csrfToken } });
      await refresh();
    },
    [refresh],
  );

  const signOut = useCallback(async () => {
    await api('/api/auth/signout', { method: 'POST' });
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
