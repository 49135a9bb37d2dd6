import { createServer, type Server } from 'node:http';

export interface HostingCall {
  operation: string;
  variables: Record<string, any>;
  authorization: string | undefined;
}

export interface FakeHostedService {
  id: string;
  name: string;
  image: string;
  variables: Record<string, string>;
  startCommand: string | null;
  domain: string | null;
}

export interface FakeDeployment {
  id: string;
  serviceId: string;
  /** The image the deployment runs (the service's image when it was made). */
  image: string;
  /** What `deployment(id)` answers, one step per query, staying on the last. */
  statuses: string[];
  /** Queries answered so far. */
  reads: number;
  /** Set by `deploymentStop`: the deployment then answers `REMOVED`. */
  stopped: boolean;
  restarts: number;
  logs: string[];
  createdAt: string;
}

export interface FakeHostingApi {
  url: string;
  calls: HostingCall[];
  /** Makes this operation answer with a GraphQL error. */
  failOn: Set<string>;
  services: Map<string, FakeHostedService>;
  deployments: Map<string, FakeDeployment>;
  /** Status sequences taken, in order, by the next deployments made; then `defaultStatuses`. */
  nextStatuses: string[][];
  /** The sequence of a deployment nothing else was set for (default `DEPLOYING` → `SUCCESS`). */
  defaultStatuses: string[];
  /** Sets an existing deployment's sequence (it restarts from the first status). */
  setStatuses(deploymentId: string, statuses: string[]): void;
  close(): Promise<void>;
}

/**
 * A hosting provider's GraphQL endpoint on 127.0.0.1 (Railway's shapes) answering what a direct deployment and the
 * `hosting` agent host use: serviceCreate, variableCollectionUpsert, serviceInstanceUpdate, serviceDomainCreate,
 * serviceInstanceDeployV2, serviceInstanceRedeploy, deployment, deploymentLogs, deploymentStop, deploymentRestart,
 * serviceDelete. Answers are `{ data }`, or `{ errors: [{ message }] }` like the real API (unknown ids:
 * `Service not found` / `Deployment not found`). A deployment's `status` walks through a sequence the test sets.
 */
export async function startFakeHostingApi(options: { apiKey: string }): Promise<FakeHostingApi> {
  const calls: HostingCall[] = [];
  const failOn = new Set<string>();
  const services = new Map<string, FakeHostedService>();
  const deployments = new Map<string, FakeDeployment>();
  const nextStatuses: string[][] = [];
  let serviceCount = 0;
  let deploymentCount = 0;
  const api: Pick<FakeHostingApi, 'defaultStatuses'> = { defaultStatuses: ['DEPLOYING', 'SUCCESS'] };

  const newDeployment = (service: FakeHostedService): FakeDeployment => {
    deploymentCount += 1;
    const deployment: FakeDeployment = {
      id: `dep-${deploymentCount}`,
      serviceId: service.id,
      image: service.image,
      statuses: [...(nextStatuses.shift() ?? api.defaultStatuses)],
      reads: 0,
      stopped: false,
      restarts: 0,
      logs: [`Starting Container`, `[gateway] ${service.startCommand ?? 'default command'} (${service.image})`],
      createdAt: new Date().toISOString(),
    };
    // A new deployment replaces the service's previous ones, as on the real provider.
    for (const other of deployments.values()) {
      if (other.serviceId === service.id && !other.stopped) other.stopped = true;
    }
    deployments.set(deployment.id, deployment);
    return deployment;
  };
  const statusOf = (d: FakeDeployment) => (d.stopped ? 'REMOVED' : (d.statuses[Math.min(d.reads, d.statuses.length - 1)] ?? 'SUCCESS'));

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
      const data = (operation: string, value: unknown) => send(200, { data: { [operation]: value } });
      const error = (message: string) => send(200, { data: null, errors: [{ message }] });
      if (req.headers.authorization !== `Bearer ${options.apiKey}`) return send(401, { errors: [{ message: 'Not Authorized' }] });
      let parsed: { query?: string; variables?: Record<string, any> };
      try {
        parsed = JSON.parse(raw || '{}');
      } catch {
        return send(400, { errors: [{ message: 'Invalid JSON body' }] });
      }
      const query = parsed.query ?? '';
      const variables = parsed.variables ?? {};
      const operation = /\{\s*(\w+)\s*\(/.exec(query.slice(query.indexOf(')') + 1))?.[1] ?? 'unknown';
      calls.push({ operation, variables, authorization: req.headers.authorization });
      if (failOn.has(operation)) return error(`${operation} failed`);
      const service = (id: unknown) => (typeof id === 'string' ? services.get(id) : undefined);
      const deployment = (id: unknown) => (typeof id === 'string' ? deployments.get(id) : undefined);
      switch (operation) {
        case 'serviceCreate': {
          serviceCount += 1;
          const created: FakeHostedService = {
            id: `svc-${serviceCount}`,
            name: variables.input.name,
            image: variables.input.source?.image ?? '',
            variables: {},
            startCommand: null,
            domain: null,
          };
          services.set(created.id, created);
          return data(operation, { id: created.id, name: created.name });
        }
        case 'variableCollectionUpsert': {
          const target = service(variables.input?.serviceId);
          if (!target) return error('Service not found');
          target.variables = variables.input.replace
            ? { ...variables.input.variables }
            : { ...target.variables, ...variables.input.variables };
          return data(operation, true);
        }
        case 'serviceInstanceUpdate': {
          const target = service(variables.serviceId);
          if (!target) return error('Service not found');
          if (typeof variables.input?.startCommand === 'string') target.startCommand = variables.input.startCommand;
          if (typeof variables.input?.source?.image === 'string') target.image = variables.input.source.image;
          return data(operation, true);
        }
        case 'serviceDomainCreate': {
          const target = service(variables.input?.serviceId);
          if (!target) return error('Service not found');
          target.domain = `${target.id}.hosting.test`;
          return data(operation, { domain: target.domain });
        }
        case 'serviceInstanceDeployV2': {
          const target = service(variables.serviceId);
          if (!target) return error('Service not found');
          return data(operation, newDeployment(target).id);
        }
        case 'serviceInstanceRedeploy': {
          const target = service(variables.serviceId);
          if (!target) return error('Service not found');
          newDeployment(target);
          return data(operation, true);
        }
        case 'deployment': {
          const found = deployment(variables.id);
          if (!found) return error('Deployment not found');
          const status = statusOf(found);
          found.reads += 1;
          return data(operation, { id: found.id, status, createdAt: found.createdAt, serviceId: found.serviceId });
        }
        case 'deploymentLogs': {
          const found = deployment(variables.deploymentId);
          if (!found) return error('Deployment not found');
          const limit = typeof variables.limit === 'number' ? variables.limit : 100;
          return data(
            operation,
            found.logs.slice(-limit).map((message) => ({ timestamp: found.createdAt, message, severity: 'info' })),
          );
        }
        case 'deploymentStop': {
          const found = deployment(variables.id);
          if (!found) return error('Deployment not found');
          found.stopped = true;
          return data(operation, true);
        }
        case 'deploymentRestart': {
          const found = deployment(variables.id);
          if (!found) return error('Deployment not found');
          found.restarts += 1;
          found.logs.push('Restarting Container');
          return data(operation, true);
        }
        case 'serviceDelete': {
          if (!service(variables.id)) return error('Service not found');
          services.delete(variables.id);
          for (const [id, d] of deployments) if (d.serviceId === variables.id) deployments.delete(id);
          return data(operation, true);
        }
        default:
          return error(`Cannot query field "${operation}" on type "Query".`);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return Object.assign(api, {
    url: `http://127.0.0.1:${port}/graphql/v2`,
    calls,
    failOn,
    services,
    deployments,
    nextStatuses,
    setStatuses(deploymentId: string, statuses: string[]) {
      const found = deployments.get(deploymentId);
      if (!found) throw new Error(`No deployment ${deploymentId}`);
      found.statuses = [...statuses];
      found.reads = 0;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}
