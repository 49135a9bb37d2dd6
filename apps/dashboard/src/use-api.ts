import { useCallback, useEffect, useRef, useState } from 'react';
import { api, errorMessage, type RequestOptions } from './api.js';

export interface Resource<T> {
  data: T | undefined;
  error: string | undefined;
  /** True until the first answer (or error); a reload keeps the old data on screen. */
  loading: boolean;
  reload: () => Promise<void>;
}

/**
 * Loads `path` when the component mounts and whenever `path`/`query` change; `refreshMs` polls. A newer request
 * supersedes an older one, so a slow answer never overwrites a fresher one.
 */
export function useApi<T>(path: string | null, options: { query?: RequestOptions['query']; refreshMs?: number } = {}): Resource<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(path !== null);
  const generation = useRef(0);
  const queryKey = JSON.stringify(options.query ?? {});

  const reload = useCallback(async () => {
    if (path === null) return;
    const mine = ++generation.current;
    try {
      const result = await api<T>(path, { query: JSON.parse(queryKey) as RequestOptions['query'] });
      if (mine !== generation.current) return;
      setData(result);
      setError(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(errorMessage(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [path, queryKey]);

  useEffect(() => {
    setLoading(path !== null);
    void reload();
    if (!options.refreshMs) return () => void generation.current++;
    const timer = setInterval(() => {
      // A hidden tab does not need fresh numbers.
      if (document.visibilityState === 'visible') void reload();
    }, options.refreshMs);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [reload, options.refreshMs, path]);

  return { data, error, loading, reload };
}

/** Runs one mutation at a time and remembers its error; `run` resolves to the result or undefined on failure. */
export function useAction<A extends unknown[], R>(action: (...args: A) => Promise<R>) {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setPending(true);
      setError(undefined);
      try {
        return await action(...args);
      } catch (err) {
        setError(errorMessage(err));
        return undefined;
      } finally {
        setPending(false);
      }
    },
    [action],
  );
  return { run, pending, error, setError };
}
