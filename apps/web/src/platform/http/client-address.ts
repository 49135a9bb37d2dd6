import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The address of the browser (or API client) a request is served for, wherever the web calls the backend on its
 * behalf: the backend's limits are per client (spec §8: 120/min per IP), so each call carries it in `X-Forwarded-For`
 * (`BackendClient`) and the backend, whose `TRUST_PROXY` names the web, counts it against that client. Without it
 * every user's token, state and lifecycle calls shared the web service's one budget, and a busy minute of one
 * dashboard (or of many users) answered everyone's next calls with 429. Outside a request (background jobs) there is
 * none, and the web's own address is counted.
 */
const storage = new AsyncLocalStorage<string>();

/** The address of the client whose request is being served (`request.ip`, as `TRUST_PROXY` lets the web read it). */
export const currentClientAddress = (): string | undefined => storage.getStore();

async function clientAddress(app: FastifyInstance): Promise<void> {
  const enter = (request: FastifyRequest, _reply: FastifyReply, done: () => void) => storage.run(request.ip, done);
  app.addHook('onRequest', enter);
  // A body is read from socket events, which do not carry the request's store: enter it again once the body is in.
  app.addHook('preValidation', enter);
}

export const clientAddressPlugin = fp(clientAddress, { name: 'aop-client-address', fastify: '5.x' });
