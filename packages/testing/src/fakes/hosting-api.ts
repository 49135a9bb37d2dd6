import { createServer, type Server } from 'node:http';

export interface HostingCall {
  operation: string;
  variables: Record<string, any>;
  authorization: string | undefined;
}

/**
 * A hosting provider's GraphQL endpoint on 127.0.0.1 answering the mutations of
 * a direct deployment (serviceCreate, variableCollectionUpsert,
 * serviceInstanceUpdate, serviceDomainCreate, serviceInstanceDeployV2) the way
 * the real API does: `{ data }`, or `{ errors: [{ message }] }`.
 */
export async function startFakeHostingApi(options: { apiKey: string }): Promise<{
  url: string;
  calls: HostingCall[];
  /** Makes this operation answer with a GraphQL error. */
  failOn: Set<string>;
  close(): Promise<void>;
}> {
  const calls: HostingCall[] = [];
  const failOn = new Set<string>();
  let services = 0;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => {
      raw += c;
    });
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.headers.authorization !== `Bearer ${options.apiKey}`) return send(401, { errors: [{ message: 'Not Authorized' }] });
      const { query, variables } = JSON.parse(raw || '{}') as { query: string; variables: Record<string, any> };
      const operation = /\{\s*(\w+)\s*\(/.exec(query.slice(query.indexOf(')') + 1))?.[1] ?? 'unknown';
      calls.push({ operation, variables, authorization: req.headers.authorization });
      if (failOn.has(operation)) return send(200, { errors: [{ message: `${operation} failed` }] });
      switch (operation) {
        case 'serviceCreate':
          services += 1;
          return send(200, { data: { serviceCreate: { id: `svc-${services}`, name: variables.input.name } } });
        case 'variableCollectionUpsert':
          return send(200, { data: { variableCollectionUpsert: true } });
        case 'serviceInstanceUpdate':
          return send(200, { data: { serviceInstanceUpdate: true } });
        case 'serviceDomainCreate':
          return send(200, { data: { serviceDomainCreate: { domain: `${variables.input.serviceId}.hosting.test` } } });
        case 'serviceInstanceDeployV2':
          return send(200, { data: { serviceInstanceDeployV2: `dep-${variables.serviceId}` } });
        default:
          return send(200, { errors: [{ message: `Cannot query field "${operation}"` }] });
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/graphql/v2`, calls, failOn, close: () => new Promise<void>((r) => server.close(() => r())) };
}
