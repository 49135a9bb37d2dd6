import type { ApiParams, ApiResponse, PathsWith } from '@aop/sdk';
import { useCallback, useEffect, useRef, useState } from 'react';
import { client, errorMessage, request } from './api.js';

export interface Resource<T> {
  data: T | undefined;
  error: string | undefined;
  /** True until the first answer (or error); a reload keeps the old data on screen. */
  loading: boolean;
  reload: () => Promise<void>;
}

type GetPath = PathsWith<'get'>;

/** `params` (path, query) as the route takes them: required when the route has a required parameter. */
export type UseApiOptions<P extends GetPath> = { refreshMs?: number } & (Record<never, never> extends ApiParams<P>
  ? { params?: ApiParams<P> }
  : { params: ApiParams<P> });

/**
 * Loads `GET path` (a path of the API's document, `/api/agents/{id}`, with its `params`) when the component mounts and
 * whenever they change; `refreshMs` polls. A newer request supersedes an older one, so a slow answer never overwrites
 * a fresher one. A `null` path loads nothing.
 */
export function useApi<P extends GetPath>(
  path: P | null,
  ...[options]: Record<never, never> extends UseApiOptions<P> ? [UseApiOptions<P>?] : [UseApiOptions<P>]
): Resource<ApiResponse<P>> {
  type Data = ApiResponse<P>;
  const [data, setData] = useState<Data>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(path !== null);
  const generation = useRef(0);
  const paramsKey = JSON.stringify(options?.params ?? {});
  const refreshMs = options?.refreshMs;

  const reload = useCallback(async () => {
    if (path === null) return;
    const mine = ++generation.current;
    try {
      // The path and its parameters were checked against the document where `useApi` was called.
      const get = client.GET as (path: string, init: { params: unknown }) => Promise<{ data?: Data; error?: unknown; response: Response }>;
      const result = await request(get(path, { params: JSON.parse(paramsKey) }));
      if (mine !== generation.current) return;
      setData(result);
      setError(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(errorMessage(err));
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [path, paramsKey]);

  useEffect(() => {
    setLoading(path !== null);
    return pollWhileVisible(reload, refreshMs, () => void generation.current++);
  }, [reload, refreshMs, path]);

  return { data, error, loading, reload };
}

/**
 * For an effect: calls `load` now and every `refreshMs` (unset: once) while the tab is visible — a hidden tab does not
 * need fresh numbers. The returned cleanup stops it and calls `onStop` (which drops answers still on their way).
 */
export function pollWhileVisible(load: () => Promise<void>, refreshMs: number | undefined, onStop: () => void): () => void {
  void load();
  const timer = refreshMs
    ? setInterval(() => {
        if (document.visibilityState === 'visible') void load();
      }, refreshMs)
    : undefined;
  return () => {
    clearInterval(timer);
    onStop();
  };
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
