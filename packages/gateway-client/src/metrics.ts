import { Counter, type Registry } from '@aop/core';
import { onGatewayError } from './gateway-client.js';

/**
 * `aop_gateway_errors_total{code}` in `registry`: every `GatewayError` raised in this process (issue #21). Errors are
 * observed process-wide (a call deep in a service has no app at hand): in a deployment each process is one service;
 * services started together in one process (tests) each count all of them. Returns the unsubscribe function.
 */
export function registerGatewayErrorMetrics(registry: Registry): () => void {
  const errors = new Counter({
    name: 'aop_gateway_errors_total',
    help: 'Failed agent-gateway calls (error answers, timeouts, refused connections, HTTP failures), by error code.',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const stop = onGatewayError((err) => errors.inc({ code: err.code }));
  return () => void stop();
}
