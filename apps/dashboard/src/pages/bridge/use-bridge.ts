import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiParams, ApiResponse } from '@aop/sdk';
import { ApiError, client, errorMessage, request } from '../../api.js';
import { pollWhileVisible } from '../../use-api.js';

type BridgePath = '/api/bridge/health' | '/api/bridge/inbox';

/**
 * The bridge routes take `X-Bridge-Secret` instead of the session (when the server sets BRIDGE_SECRET). The secret is
 * passed in from React state on every call and kept nowhere else: not in storage, not in the URL.
 */
export function bridgeHeaders(secret: string | undefined): Record<string, string> | undefined {
  return secret ? { 'x-bridge-secret': secret } : undefined;
}

export interface BridgeResource<T> {
  data: T | undefined;
  error: string | undefined;
  /** The HTTP status of the last failure (401: the secret is missing or wrong). */
  status: number | undefined;
  loading: boolean;
  reload: () => Promise<void>;
}

/**
 * Like useApi, with the bridge secret header. `query` is called at each request, so a "since" window is measured
 * from the moment of the request; `key` says when the query has changed.
 */
export function useBridge<P extends BridgePath>(
  path: P,
  secret: string | undefined,
  options: { query?: () => ApiParams<P>['query']; key?: string; refreshMs?: number; enabled?: boolean } = {},
): BridgeResource<ApiResponse<P>> {
  type T = ApiResponse<P>;
  const { key = '', refreshMs, enabled = true } = options;
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<number>();
  const [loading, setLoading] = useState(enabled);
  const query = useRef(options.query);
  query.current = options.query;
  const generation = useRef(0);

  const reload = useCallback(async () => {
    if (!enabled) return;
    const mine = ++generation.current;
    try {
      // `path` and its query were checked against the document where `useBridge` was called.
      const get = client.GET as (path: string, init: object) => Promise<{ data?: T; error?: unknown; response: Response }>;
      const result = await request(get(path, { params: { query: query.current?.() }, headers: bridgeHeaders(secret) }));
      if (mine !== generation.current) return;
      setData(result);
      setError(undefined);
      setStatus(undefined);
    } catch (err) {
      if (mine !== generation.current) return;
      setError(errorMessage(err));
      setStatus(err instanceof ApiError ? err.status : undefined);
    } finally {
      if (mine === generation.current) setLoading(false);
    }
  }, [path, secret, key, enabled]);

  useEffect(() => {
    // Another secret or query: what was shown belongs to the old one.
    setData(undefined);
    setError(undefined);
    setStatus(undefined);
    setLoading(enabled);
    return pollWhileVisible(reload, refreshMs, () => {
      generation.current++;
    });
  }, [reload, refreshMs, enabled]);

  return { data, error, status, loading, reload };
}
