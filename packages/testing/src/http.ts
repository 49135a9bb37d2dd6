import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
/** A parsed HTTP answer: status, headers and the JSON (or text) body. */
export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  /** Sent as JSON unless it is already a string. */
  json?: unknown;
  body?: string | Buffer;
  redirect?: 'manual' | 'follow' | 'error';
}

/** Sends one real HTTP request to a listening service. */
export async function request<T = any>(url: string, options: RequestOptions = {}): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, {
    method: options.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
    redirect: options.redirect ?? 'manual',
  });
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** A TCP port on 127.0.0.1 that nothing listens on (a service that is down, an unreachable upstream). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
