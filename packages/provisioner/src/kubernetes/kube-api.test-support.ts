import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join, posix } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { WebSocketServer } from 'ws';

/**
 * A small Kubernetes API server for tests: it keeps objects in memory and answers the real REST paths and shapes
 * `@kubernetes/client-node` uses for apps/v1 Deployments, v1 Services, PersistentVolumeClaims, Secrets, ConfigMaps,
 * Pods (and their `log` subresource), batch/v1 Jobs and metrics.k8s.io PodMetrics. Patches are applied as the
 * client sends them (JSON Patch, merge patch, strategic merge patch); missing objects are 404 `Status` objects.
 *
 * It also plays the controllers a test needs: a Deployment gets one pod per replica (Recreate: pods of an older
 * pod template are removed first), its status follows the pods, and a Job finishes as soon as it is created.
 * Pod readiness is decided by the test (`setReady`, or `autoReady` for a rule). Every call is recorded.
 *
 * The pods' `exec` subresource is served over WebSocket as the API server does (`v5.channel.k8s.io`, or `v4` for
 * older clients: channel 0 stdin, 1 stdout, 2 stderr, 3 the final `Status`, `NonZeroExitCode` with the exit code as
 * its cause; v5's `255 0` closes stdin); what the command does is the test's `exec` handler. With `volumesDir`, pods'
 * PersistentVolumeClaim and emptyDir volumes are directories under it (`pvcDir`), and a command the handler leaves
 * (`null`) runs on this machine as the container's process would: `node` is this Node, every argument that is an
 * absolute path is replaced by where it is here (the directory of the volume mounted there, else the pod's own
 * layer), stdin is fed from channel 0, output goes back on channels 1 and 2 while the process runs.
 *
 * The `log` subresource answers `tailLines`, `sinceTime`, `timestamps` (RFC 3339 with nanoseconds, only going
 * forward) and `follow=true`, which keeps the answer open with each new line (`appendLogs`) until the pod goes.
 */

type Json = Record<string, any>;

export interface KubeCall {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | null;
  body: unknown;
  status: number;
}

export interface WaitingProblem {
  reason: string;
  message: string;
}

export interface KubeApiEmulatorOptions {
  /** Bearer token the API server expects (401 otherwise). Default `emulator-token`. */
  token?: string;
  /** Serve metrics.k8s.io (as when metrics-server is installed). Default true. */
  metricsApi?: boolean;
  /** Readiness of a deployment's pods when the test has not set it with `setReady`. Default: not ready. */
  autoReady?: (deployment: Json) => boolean;
  /** A waiting reason for a deployment's container (e.g. `ImagePullBackOff`), or null when it runs. */
  podProblem?: (deployment: Json) => WaitingProblem | null;
  /** How a Job ends (default: it succeeds). */
  jobOutcome?: (job: Json) => 'succeeded' | 'failed';
  /**
   * Runs a command exec'd into a pod's container; `null` leaves it to the local run of `volumesDir` (default, and
   * without `volumesDir`: exit 127, not found).
   */
  exec?: (call: KubeExecCall) => Promise<{ stdout?: string; stderr?: string; exitCode: number } | null>;
  /** Where pods' volumes live on this machine; exec'd commands then run here (see the top of the file). */
  volumesDir?: string;
}

/** `POST /api/v1/namespaces/{namespace}/pods/{pod}/exec` (a WebSocket upgrade). */
export interface KubeExecCall {
  namespace: string;
  pod: string;
  container: string;
  command: string[];
}

interface Resource {
  prefix: string;
  plural: string;
  kind: string;
  group: string;
}

const RESOURCES: Resource[] = [
  { prefix: '/apis/apps/v1', plural: 'deployments', kind: 'Deployment', group: 'apps' },
  { prefix: '/apis/batch/v1', plural: 'jobs', kind: 'Job', group: 'batch' },
  { prefix: '/api/v1', plural: 'services', kind: 'Service', group: '' },
  { prefix: '/api/v1', plural: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', group: '' },
  { prefix: '/api/v1', plural: 'secrets', kind: 'Secret', group: '' },
  { prefix: '/api/v1', plural: 'configmaps', kind: 'ConfigMap', group: '' },
  { prefix: '/api/v1', plural: 'pods', kind: 'Pod', group: '' },
];

const OBJECT_PATH = /^(\/api\/v1|\/apis\/apps\/v1|\/apis\/batch\/v1)\/namespaces\/([^/]+)\/([a-z]+)(?:\/([^/]+))?(?:\/(log|status))?$/;
const METRICS_PATH = /^\/apis\/metrics\.k8s\.io\/v1beta1\/namespaces\/([^/]+)\/pods(?:\/([^/]+))?$/;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const clone = <T>(value: T): T => structuredClone(value);

class HttpFailure extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details: Json = {},
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------- patches

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** RFC 6902 JSON Patch (`add`, `remove`, `replace`, `test`), as `kubectl patch --type json` sends it. */
export function applyJsonPatch(document: Json, operations: unknown): Json {
  if (!Array.isArray(operations)) throw new HttpFailure(400, 'BadRequest', 'json patch must be an array of operations');
  const result = clone(document);
  for (const op of operations as Json[]) {
    const segments = String(op.path ?? '')
      .split('/')
      .slice(1)
      .map(unescapePointer);
    const last = segments.pop();
    if (last === undefined) throw new HttpFailure(422, 'Invalid', `invalid json patch path: ${op.path}`);
    let parent: any = result;
    for (const segment of segments) {
      if (parent === undefined || parent === null) break;
      parent = Array.isArray(parent) ? parent[Number(segment)] : parent[segment];
    }
    if (parent === undefined || parent === null || typeof parent !== 'object') {
      throw new HttpFailure(422, 'Invalid', `doc is missing path: ${op.path}`);
    }
    const index = Array.isArray(parent) ? (last === '-' ? parent.length : Number(last)) : -1;
    switch (op.op) {
      case 'add':
        if (Array.isArray(parent)) parent.splice(index, 0, op.value);
        else parent[last] = op.value;
        break;
      case 'replace':
        if (Array.isArray(parent) ? index >= parent.length : !(last in parent)) {
          throw new HttpFailure(422, 'Invalid', `replace operation does not apply: doc is missing key: ${op.path}`);
        }
        if (Array.isArray(parent)) parent[index] = op.value;
        else parent[last] = op.value;
        break;
      case 'remove':
        if (Array.isArray(parent)) parent.splice(index, 1);
        else if (last in parent) delete parent[last];
        else throw new HttpFailure(422, 'Invalid', `remove operation does not apply: doc is missing key: ${op.path}`);
        break;
      case 'test':
        if (JSON.stringify(Array.isArray(parent) ? parent[index] : parent[last]) !== JSON.stringify(op.value)) {
          throw new HttpFailure(422, 'Invalid', `testing value ${op.path} failed`);
        }
        break;
      default:
        throw new HttpFailure(422, 'Invalid', `unsupported json patch operation: ${op.op}`);
    }
  }
  return result;
}

/** RFC 7386 JSON merge patch: objects merge, `null` removes, everything else (lists too) replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const result: Json = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/**
 * Kubernetes strategic merge patch, for the fields our host patches: like a merge patch, except that lists of
 * named objects (containers, init containers, env, volumes, volume mounts) are merged by `name`.
 */
export function applyStrategicMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const result: Json = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue; // directives ($patch, $setElementOrder/…) are not needed by our host
    const current = result[key];
    if (value === null) delete result[key];
    else if (Array.isArray(value) && Array.isArray(current) && [...value, ...current].every((item) => isObject(item) && 'name' in item)) {
      const merged: Json[] = current.map((item: Json) => clone(item));
      for (const item of value as Json[]) {
        const at = merged.findIndex((existing: Json) => existing.name === item.name);
        if (at === -1) merged.push(clone(item));
        else merged[at] = applyStrategicMergePatch(merged[at], item) as Json;
      }
      result[key] = merged;
    } else result[key] = applyStrategicMergePatch(current, value);
  }
  return result;
}

// ---------------------------------------------------------------- label selectors

/** Equality-based selectors (`a=b,c!=d,e`), the form our host sends. */
export function matchesSelector(labels: Record<string, string> | undefined, selector: string | undefined): boolean {
  if (!selector) return true;
  const have = labels ?? {};
  return selector
    .split(',')
    .map((term) => term.trim())
    .filter(Boolean)
    .every((term) => {
      const unequal = term.split('!=');
      if (unequal.length === 2) return have[unequal[0]!.trim()] !== unequal[1]!.trim();
      const equal = term.split(/==?/);
      if (equal.length === 2) return have[equal[0]!.trim()] === equal[1]!.trim();
      if (term.startsWith('!')) return !(term.slice(1) in have);
      return term in have;
    });
}

// ---------------------------------------------------------------- the server

export class KubeApiEmulator {
  readonly calls: KubeCall[] = [];
  private readonly objects = new Map<string, Json>();
  private readonly readiness = new Map<string, boolean>();
  private readonly logs = new Map<string, Array<{ time: string; text: string }>>();
  /** Open `log?follow=true` answers per pod. */
  private readonly follows = new Map<string, Set<{ send(entry: { time: string; text: string }): void; end(): void }>>();
  private lastLogNs = 0n;
  private readonly metrics = new Map<string, { cpu: string; memory: string }>();
  private readonly failures: Array<{ match: (call: KubeCall) => boolean; code: number; reason: string; message: string }> = [];
  private server: Server | null = null;
  /** Exec sessions, in order. */
  readonly execs: KubeExecCall[] = [];
  private version = 1;
  private podCounter = 0;
  url = '';

  /** Its options; a test may change the `exec` handler between calls. */
  constructor(readonly options: KubeApiEmulatorOptions = {}) {}

  get token(): string {
    return this.options.token ?? 'emulator-token';
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req, res);
    });
    const wss = new WebSocketServer({
      noServer: true,
      // Recent API servers speak v5 (which can close stdin); v4 for clients that do not offer it.
      handleProtocols: (offered) =>
        offered.has('v5.channel.k8s.io') ? 'v5.channel.k8s.io' : offered.has('v4.channel.k8s.io') ? 'v4.channel.k8s.io' : false,
    });
    this.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => this.upgrade(wss, req, socket, head));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** A KubeConfig for this server, built the way an operator's kubeconfig file would be (`loadFromOptions`). */
  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'emulator', server: this.url, skipTLSVerify: true }],
      users: [{ name: 'emulator', token: this.token }],
      contexts: [{ name: 'emulator', cluster: 'emulator', user: 'emulator' }],
      currentContext: 'emulator',
    });
    return kc;
  }

  // ---------------------------------------------------------------- test controls

  /** A stored object (a copy), or undefined. */
  get(plural: string, namespace: string, name: string): Json | undefined {
    const object = this.objects.get(this.key(plural, namespace, name));
    return object ? clone(object) : undefined;
  }

  list(plural: string, namespace: string, selector?: string): Json[] {
    return this.items(plural, namespace, selector).map(clone);
  }

  /** Stores an object directly (as another client would), e.g. to tamper with an agent's ConfigMap. */
  put(plural: string, namespace: string, object: Json): void {
    const stored = clone(object);
    stored.metadata = { uid: randomUUID(), creationTimestamp: new Date().toISOString(), ...stored.metadata, namespace };
    stored.metadata.resourceVersion = String(this.version++);
    this.objects.set(this.key(plural, namespace, stored.metadata.name), stored);
  }

  remove(plural: string, namespace: string, name: string): void {
    this.objects.delete(this.key(plural, namespace, name));
  }

  /** Makes a deployment's pods ready (or not), as their readiness probe would. */
  setReady(namespace: string, deployment: string, ready: boolean): void {
    this.readiness.set(this.key('deployments', namespace, deployment), ready);
    const object = this.objects.get(this.key('deployments', namespace, deployment));
    if (object) this.reconcileDeployment(object);
  }

  /** Pods of a deployment, oldest first. */
  podsOf(namespace: string, deployment: string): Json[] {
    const object = this.objects.get(this.key('deployments', namespace, deployment));
    return object ? this.ownedPods(object).map(clone) : [];
  }

  appendLogs(namespace: string, pod: string, lines: string[]): void {
    const key = this.key('pods', namespace, pod);
    const entries = lines.map((text) => ({ time: this.logTime(), text }));
    this.logs.set(key, [...(this.logs.get(key) ?? []), ...entries]);
    for (const entry of entries) for (const follow of this.follows.get(key) ?? []) follow.send(entry);
  }

  /** The directory holding a PersistentVolumeClaim's files (with `volumesDir`). */
  pvcDir(namespace: string, claim: string): string {
    if (!this.options.volumesDir) throw new Error('the emulator was started without volumesDir');
    const dir = join(this.options.volumesDir, namespace, 'pvc', claim);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** RFC 3339 with nanoseconds, as the kubelet stamps log lines; never earlier than the line before. */
  private logTime(): string {
    let ns = BigInt(Date.now()) * 1_000_000n + BigInt(process.hrtime()[1] % 1_000_000);
    if (ns <= this.lastLogNs) ns = this.lastLogNs + 1n;
    this.lastLogNs = ns;
    return `${new Date(Number(ns / 1_000_000n)).toISOString().slice(0, -1)}${String(ns % 1_000_000n).padStart(6, '0')}Z`;
  }

  setPodMetrics(namespace: string, pod: string, usage: { cpu: string; memory: string }): void {
    this.metrics.set(this.key('pods', namespace, pod), usage);
  }

  /** Answers the next call that `match`es with this error Status (e.g. a 403 quota rejection). */
  failNext(match: (call: KubeCall) => boolean, code: number, reason: string, message: string): void {
    this.failures.push({ match, code, reason, message });
  }

  callsTo(method: string, pathPattern: RegExp): KubeCall[] {
    return this.calls.filter((call) => call.method === method && pathPattern.test(call.path));
  }

  // ---------------------------------------------------------------- request handling

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const contentType = req.headers['content-type']?.split(';')[0]?.trim() ?? null;
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/$/, '') : url.pathname;
    const call: KubeCall = {
      method: req.method ?? 'GET',
      path,
      query: Object.fromEntries(url.searchParams),
      contentType,
      body: null,
      status: 0,
    };
    this.calls.push(call);
    const send = (status: number, body: unknown, type = 'application/json') => {
      call.status = status;
      res.writeHead(status, { 'content-type': type });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    };
    try {
      if (req.headers.authorization !== `Bearer ${this.token}`) throw new HttpFailure(401, 'Unauthorized', 'Unauthorized');
      call.body = raw ? JSON.parse(raw) : null;
      const failure = this.failures.findIndex((f) => f.match(call));
      if (failure !== -1) {
        const [f] = this.failures.splice(failure, 1);
        throw new HttpFailure(f!.code, f!.reason, f!.message);
      }
      const follow = this.followLog(call, res);
      if (follow) return;
      const answer = this.route(call);
      if (typeof answer.body === 'string') send(answer.status, answer.body, 'text/plain');
      else send(answer.status, answer.body);
    } catch (error) {
      const failure =
        error instanceof HttpFailure
          ? error
          : error instanceof SyntaxError
            ? new HttpFailure(400, 'BadRequest', `invalid JSON body: ${error.message}`)
            : new HttpFailure(500, 'InternalError', (error as Error).message);
      send(failure.code, {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: failure.message,
        reason: failure.reason,
        details: failure.details,
        code: failure.code,
      });
    }
  }

  /** The `exec` subresource: checked like any request, then streamed over the channel protocol. */
  private upgrade(wss: WebSocketServer, req: IncomingMessage, socket: Socket, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const call: KubeCall = {
      method: 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      contentType: null,
      body: null,
      status: 0,
    };
    this.calls.push(call);
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/exec$/.exec(url.pathname);
    const [, namespace = '', pod = ''] = match ?? [];
    const object = match ? this.objects.get(this.key('pods', namespace, pod)) : undefined;
    const command = url.searchParams.getAll('command');
    const container = url.searchParams.get('container') ?? object?.spec?.containers?.[0]?.name ?? '';
    const refusal: [number, string, string] | null =
      req.headers.authorization !== `Bearer ${this.token}`
        ? [401, 'Unauthorized', 'Unauthorized']
        : !match
          ? [404, 'NotFound', 'the server could not find the requested resource']
          : !object
            ? [404, 'NotFound', `pods "${pod}" not found`]
            : command.length === 0
              ? [400, 'BadRequest', 'you must specify at least 1 command']
              : object.status?.phase !== 'Running'
                ? [400, 'BadRequest', `unable to upgrade connection: container not found ("${container}")`]
                : null;
    if (refusal) {
      const [code, reason, message] = refusal;
      call.status = code;
      const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
      socket.end(
        `HTTP/1.1 ${code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      return;
    }
    const exec: KubeExecCall = { namespace, pod, container, command };
    this.execs.push(exec);
    call.status = 101;
    wss.handleUpgrade(req, socket, head, (ws) => {
      const frame = (channel: number, data: Buffer | string) => Buffer.concat([Buffer.from([channel]), Buffer.from(data)]);
      const finish = (exitCode: number) => {
        const status =
          exitCode === 0
            ? { metadata: {}, status: 'Success' }
            : {
                metadata: {},
                status: 'Failure',
                message: `command terminated with non-zero exit code: error executing command [${command.join(' ')}], exit code ${exitCode}`,
                reason: 'NonZeroExitCode',
                details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
              };
        ws.send(frame(3, JSON.stringify(status)));
        ws.close(1000);
      };
      const fail = (error: unknown) => {
        ws.send(frame(3, JSON.stringify({ metadata: {}, status: 'Failure', message: String(error), reason: 'InternalError' })));
        ws.close(1000);
      };
      // Input that arrives before the command runs waits for it.
      const input: Buffer[] = [];
      let inputClosed = false;
      let feed: ((chunk: Buffer | null) => void) | null = null;
      ws.on('message', (data: Buffer) => {
        let chunk: Buffer | null;
        if (data[0] === 0) chunk = data.subarray(1);
        else if (data[0] === 255 && data[1] === 0)
          chunk = null; // v5: stdin closed
        else return;
        if (chunk === null) inputClosed = true;
        if (feed) feed(chunk);
        else if (chunk !== null) input.push(chunk);
      });
      type Answer = Awaited<ReturnType<NonNullable<KubeApiEmulatorOptions['exec']>>>;
      const notFound = async (): Promise<Answer> => ({
        stderr: `exec: "${command[0]}": executable file not found in $PATH`,
        exitCode: 127,
      });
      const handler = this.options.exec ?? (this.options.volumesDir ? async (): Promise<Answer> => null : notFound);
      void handler(exec).then((answer) => {
        if (answer) {
          if (answer.stdout) ws.send(frame(1, answer.stdout));
          if (answer.stderr) ws.send(frame(2, answer.stderr));
          return finish(answer.exitCode);
        }
        if (!this.options.volumesDir) {
          ws.send(frame(2, `exec: "${command[0]}": executable file not found in $PATH`));
          return finish(127);
        }
        const child = spawn(
          command[0] === 'node' ? process.execPath : command[0]!,
          command.slice(1).map((arg) => this.here(object!, container, arg)),
          {
            env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LANG: 'C.UTF-8' },
            stdio: ['pipe', 'pipe', 'pipe'],
          },
        );
        child.stdout.on('data', (chunk: Buffer) => ws.send(frame(1, chunk)));
        child.stderr.on('data', (chunk: Buffer) => ws.send(frame(2, chunk)));
        child.stdin.on('error', () => undefined); // the process may exit before taking all of its input
        if (url.searchParams.get('stdin') === 'true') {
          for (const chunk of input.splice(0)) child.stdin.write(chunk);
          if (inputClosed) child.stdin.end();
          feed = (chunk) => (chunk === null ? child.stdin.end() : child.stdin.write(chunk));
          ws.on('close', () => child.stdin.end());
        } else child.stdin.end();
        child.once('error', () => {
          ws.send(frame(2, `exec: "${command[0]}": executable file not found in $PATH`));
          finish(127);
        });
        child.once('close', (code, signal) => finish(code ?? (signal ? 137 : 1)));
      }, fail);
    });
  }

  /**
   * Where a path of a pod's container is on this machine: under the volume mounted there (a claim's directory, or the
   * pod's own for an emptyDir), else in the pod's own layer. Relative arguments are not paths and stay as they are.
   */
  private here(pod: Json, containerName: string, arg: string): string {
    if (!arg.startsWith('/')) return arg;
    const path = posix.normalize(arg);
    const namespace = pod.metadata.namespace as string;
    const podDir = join(this.options.volumesDir!, namespace, 'pod', pod.metadata.name);
    const container = (pod.spec.containers ?? []).find((c: Json) => c.name === containerName);
    const mount = ((container?.volumeMounts ?? []) as Json[])
      .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
      .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
    const volume = mount && (pod.spec.volumes ?? []).find((v: Json) => v.name === mount.name);
    const rest = mount ? path.slice(mount.mountPath.length) : path;
    const base = volume?.persistentVolumeClaim
      ? this.pvcDir(namespace, volume.persistentVolumeClaim.claimName)
      : volume
        ? join(podDir, 'volumes', volume.name)
        : join(podDir, 'rootfs');
    mkdirSync(base, { recursive: true });
    return join(base, rest);
  }

  private route(call: KubeCall): { status: number; body: unknown } {
    const { method, path } = call;
    if (method === 'GET' && path === '/apis') return { status: 200, body: this.groupList() };
    const metrics = METRICS_PATH.exec(path);
    if (metrics) return this.podMetrics(metrics[1]!, metrics[2]);
    const match = OBJECT_PATH.exec(path);
    const resource = match && RESOURCES.find((r) => r.prefix === match[1] && r.plural === match[3]);
    if (!match || !resource) throw new HttpFailure(404, 'NotFound', 'the server could not find the requested resource');
    const namespace = match[2]!;
    const name = match[4];
    const sub = match[5];
    if (sub === 'log') {
      if (resource.plural !== 'pods' || method !== 'GET') throw new HttpFailure(405, 'MethodNotAllowed', 'method not allowed');
      return this.podLog(namespace, name!, call.query);
    }
    if (!name) {
      if (method === 'GET') return { status: 200, body: this.listBody(resource, namespace, call.query.labelSelector) };
      if (method === 'POST') return { status: 201, body: this.create(resource, namespace, call.body) };
      throw new HttpFailure(405, 'MethodNotAllowed', 'method not allowed');
    }
    const stored = this.objects.get(this.key(resource.plural, namespace, name));
    if (!stored) this.notFound(resource, name);
    switch (method) {
      case 'GET':
        return { status: 200, body: clone(stored) };
      case 'PUT':
        return { status: 200, body: this.replace(resource, stored!, call.body) };
      case 'PATCH':
        return { status: 200, body: this.patch(resource, stored!, call.contentType, call.body) };
      case 'DELETE':
        this.delete(resource, stored!);
        return {
          status: 200,
          body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: resource.plural } },
        };
      default:
        throw new HttpFailure(405, 'MethodNotAllowed', 'method not allowed');
    }
  }

  private groupList(): Json {
    const group = (name: string, version: string) => ({
      name,
      versions: [{ groupVersion: `${name}/${version}`, version }],
      preferredVersion: { groupVersion: `${name}/${version}`, version },
    });
    const groups = [group('apps', 'v1'), group('batch', 'v1')];
    if (this.options.metricsApi !== false) groups.push(group('metrics.k8s.io', 'v1beta1'));
    return { kind: 'APIGroupList', apiVersion: 'v1', groups };
  }

  private notFound(resource: Resource, name: string): never {
    const qualified = resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
    throw new HttpFailure(404, 'NotFound', `${qualified} "${name}" not found`, { name, group: resource.group, kind: resource.plural });
  }

  private key(plural: string, namespace: string, name: string): string {
    return `${plural}/${namespace}/${name}`;
  }

  private items(plural: string, namespace: string, selector?: string): Json[] {
    const prefix = `${plural}/${namespace}/`;
    return [...this.objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && matchesSelector(object.metadata?.labels, selector))
      .map(([, object]) => object);
  }

  private listBody(resource: Resource, namespace: string, selector?: string): Json {
    return {
      kind: `${resource.kind}List`,
      apiVersion: resource.group ? `${resource.group}/v1` : 'v1',
      metadata: { resourceVersion: String(this.version) },
      items: this.items(resource.plural, namespace, selector).map(clone),
    };
  }

  private create(resource: Resource, namespace: string, body: unknown): Json {
    if (!isObject(body) || !isObject(body.metadata) || typeof body.metadata.name !== 'string') {
      throw new HttpFailure(422, 'Invalid', `${resource.kind} is invalid: metadata.name: Required value`);
    }
    const name = body.metadata.name as string;
    const qualified = resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
    if (this.objects.has(this.key(resource.plural, namespace, name))) {
      throw new HttpFailure(409, 'AlreadyExists', `${qualified} "${name}" already exists`, {
        name,
        group: resource.group,
        kind: resource.plural,
      });
    }
    const object = clone(body);
    object.metadata = {
      ...object.metadata,
      namespace,
      uid: randomUUID(),
      resourceVersion: String(this.version++),
      creationTimestamp: new Date().toISOString(),
    };
    if (resource.plural === 'deployments' || resource.plural === 'jobs') object.metadata.generation = 1;
    if (resource.plural === 'secrets' && isObject(object.stringData)) {
      object.data = { ...object.data };
      for (const [k, v] of Object.entries(object.stringData)) object.data[k] = Buffer.from(String(v)).toString('base64');
      delete object.stringData;
    }
    if (resource.plural === 'services') object.spec = { clusterIP: `10.96.0.${(this.version % 250) + 1}`, ...object.spec };
    if (resource.plural === 'persistentvolumeclaims') {
      const source = object.spec?.dataSource;
      const sourceMissing =
        source?.kind === 'PersistentVolumeClaim' && !this.objects.has(this.key('persistentvolumeclaims', namespace, source.name));
      object.status = sourceMissing
        ? { phase: 'Pending' }
        : { phase: 'Bound', capacity: { storage: object.spec?.resources?.requests?.storage } };
    }
    this.objects.set(this.key(resource.plural, namespace, name), object);
    if (resource.plural === 'deployments') this.reconcileDeployment(object);
    if (resource.plural === 'jobs') this.finishJob(object);
    return clone(object);
  }

  private replace(resource: Resource, stored: Json, body: unknown): Json {
    if (!isObject(body)) throw new HttpFailure(400, 'BadRequest', 'body must be an object');
    const sent = body.metadata?.resourceVersion;
    if (sent !== undefined && sent !== stored.metadata.resourceVersion) {
      throw new HttpFailure(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resource.plural} "${stored.metadata.name}": the object has been modified`,
      );
    }
    const next = clone(body);
    next.metadata = { ...next.metadata, ...this.systemMetadata(stored) };
    if ('status' in stored && !('status' in body)) next.status = stored.status;
    return this.store(resource, stored, next);
  }

  private patch(resource: Resource, stored: Json, contentType: string | null, body: unknown): Json {
    let next: Json;
    if (contentType === 'application/json-patch+json') next = applyJsonPatch(stored, body);
    else if (contentType === 'application/merge-patch+json') next = applyMergePatch(stored, body) as Json;
    else if (contentType === 'application/strategic-merge-patch+json') next = applyStrategicMergePatch(stored, body) as Json;
    else
      throw new HttpFailure(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
      );
    next.metadata = { ...next.metadata, ...this.systemMetadata(stored) };
    return this.store(resource, stored, next);
  }

  private systemMetadata(stored: Json): Json {
    const { uid, creationTimestamp, namespace, name, generation } = stored.metadata;
    return { uid, creationTimestamp, namespace, name, generation };
  }

  private store(resource: Resource, stored: Json, next: Json): Json {
    if (resource.plural === 'deployments' && JSON.stringify(next.spec) !== JSON.stringify(stored.spec)) {
      next.metadata.generation = (stored.metadata.generation ?? 1) + 1;
    }
    next.metadata.resourceVersion = String(this.version++);
    this.objects.set(this.key(resource.plural, stored.metadata.namespace, stored.metadata.name), next);
    if (resource.plural === 'deployments') this.reconcileDeployment(next);
    return clone(next);
  }

  private delete(resource: Resource, stored: Json): void {
    const { namespace, name } = stored.metadata;
    this.objects.delete(this.key(resource.plural, namespace, name));
    // Garbage collection of what the object owned (a Deployment's pods).
    if (resource.plural === 'deployments') for (const pod of this.ownedPods(stored)) this.deletePod(pod);
  }

  // ---------------------------------------------------------------- controllers

  private templateHash(deployment: Json): string {
    return createHash('sha256')
      .update(JSON.stringify(deployment.spec?.template ?? {}))
      .digest('hex')
      .slice(0, 10);
  }

  private ownedPods(deployment: Json): Json[] {
    const prefix = `${deployment.metadata.name}-`;
    return this.items('pods', deployment.metadata.namespace)
      .filter((pod) => pod.metadata.ownerReferences?.[0]?.name?.startsWith(prefix))
      .filter((pod) => matchesLabels(pod.metadata.labels, deployment.spec?.selector?.matchLabels))
      .sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp));
  }

  private deletePod(pod: Json): void {
    const key = this.key('pods', pod.metadata.namespace, pod.metadata.name);
    for (const follow of [...(this.follows.get(key) ?? [])]) follow.end(); // a follow ends with its pod
    this.objects.delete(key);
    this.logs.delete(key);
    this.metrics.delete(key);
  }

  /** The Deployment + ReplicaSet controllers and the kubelet, in one synchronous step. */
  private reconcileDeployment(deployment: Json): void {
    const { namespace, name } = deployment.metadata;
    const replicas = deployment.spec?.replicas ?? 1;
    const hash = this.templateHash(deployment);
    for (const pod of this.ownedPods(deployment)) {
      if (replicas === 0 || pod.metadata.labels?.['pod-template-hash'] !== hash) this.deletePod(pod);
    }
    while (this.ownedPods(deployment).length < replicas) {
      this.podCounter += 1;
      const template = clone(deployment.spec?.template ?? {});
      const podName = `${name}-${hash}-${this.podCounter.toString(36).padStart(5, 'x')}`;
      const now = new Date(Date.now() + this.podCounter).toISOString(); // strictly increasing creation order
      this.objects.set(this.key('pods', namespace, podName), {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          ...template.metadata,
          name: podName,
          namespace,
          uid: randomUUID(),
          resourceVersion: String(this.version++),
          creationTimestamp: now,
          labels: { ...template.metadata?.labels, 'pod-template-hash': hash },
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${name}-${hash}`, uid: randomUUID(), controller: true }],
        },
        spec: template.spec ?? {},
        status: { phase: 'Pending', startTime: now },
      });
    }
    const pods = this.ownedPods(deployment);
    const ready = this.readiness.get(this.key('deployments', namespace, name)) ?? this.options.autoReady?.(deployment) ?? false;
    const problem = this.options.podProblem?.(deployment) ?? null;
    for (const pod of pods) this.updatePodStatus(pod, ready && !problem, problem);
    const readyCount = pods.filter((pod) => pod.status.conditions?.some((c: Json) => c.type === 'Ready' && c.status === 'True')).length;
    const updated = pods.filter((pod) => pod.metadata.labels?.['pod-template-hash'] === hash).length;
    // Like the real API server, zero counts are left out of the status.
    const status: Json = { observedGeneration: deployment.metadata.generation ?? 1 };
    if (pods.length) status.replicas = pods.length;
    if (updated) status.updatedReplicas = updated;
    if (readyCount) status.readyReplicas = readyCount;
    if (readyCount) status.availableReplicas = readyCount;
    if (pods.length - readyCount) status.unavailableReplicas = pods.length - readyCount;
    status.conditions = [
      {
        type: 'Available',
        status: readyCount >= replicas ? 'True' : 'False',
        reason: readyCount >= replicas ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
      },
      { type: 'Progressing', status: 'True', reason: readyCount >= replicas ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated' },
    ];
    deployment.status = status;
  }

  private updatePodStatus(pod: Json, ready: boolean, problem: WaitingProblem | null): void {
    const wasReady = pod.status.conditions?.some((c: Json) => c.type === 'Ready' && c.status === 'True') ?? false;
    const readyCondition = pod.status.conditions?.find((c: Json) => c.type === 'Ready');
    const changedAt = wasReady === ready && readyCondition ? readyCondition.lastTransitionTime : new Date().toISOString();
    pod.status = {
      phase: problem ? 'Pending' : 'Running',
      startTime: pod.status.startTime,
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: changedAt },
      ],
      containerStatuses: (pod.spec.containers ?? []).map((container: Json) => ({
        name: container.name,
        image: container.image,
        ready,
        started: !problem,
        restartCount: 0,
        state: problem ? { waiting: problem } : { running: { startedAt: pod.status.startTime } },
      })),
    };
  }

  private finishJob(job: Json): void {
    const outcome = this.options.jobOutcome?.(job) ?? 'succeeded';
    const now = new Date().toISOString();
    job.status =
      outcome === 'succeeded'
        ? { succeeded: 1, startTime: now, completionTime: now, conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: now }] }
        : {
            failed: 1,
            startTime: now,
            conditions: [
              { type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' },
            ],
          };
  }

  // ---------------------------------------------------------------- pod log, metrics

  private podLog(namespace: string, name: string, query: Record<string, string>): { status: number; body: string } {
    const pod = this.objects.get(this.key('pods', namespace, name));
    if (!pod) this.notFound(RESOURCES.find((r) => r.plural === 'pods')!, name);
    const container = query.container ?? pod!.spec.containers?.[0]?.name;
    const waiting = pod!.status.containerStatuses?.find((c: Json) => c.name === container)?.state?.waiting;
    if (waiting) {
      throw new HttpFailure(400, 'BadRequest', `container "${container}" in pod "${name}" is waiting to start: ${waiting.reason}`);
    }
    let since: number | null = null;
    if (query.sinceTime !== undefined) {
      since = Date.parse(query.sinceTime);
      if (Number.isNaN(since)) throw new HttpFailure(400, 'BadRequest', `parsing time "${query.sinceTime}" as RFC3339: cannot parse`);
      since = Math.floor(since / 1000) * 1000; // sinceTime is to the second
    }
    let lines = (this.logs.get(this.key('pods', namespace, name)) ?? []).filter((e) => since === null || Date.parse(e.time) >= since);
    if (query.tailLines !== undefined) lines = Number(query.tailLines) === 0 ? [] : lines.slice(-Number(query.tailLines));
    return { status: 200, body: lines.map((entry) => this.logLine(entry, query)).join('') };
  }

  private logLine(entry: { time: string; text: string }, query: Record<string, string>): string {
    return `${query.timestamps === 'true' ? `${entry.time} ` : ''}${entry.text}\n`;
  }

  /** `GET …/pods/{pod}/log?follow=true`: the lines so far, then each new one, until the pod is deleted. */
  private followLog(call: KubeCall, res: ServerResponse): boolean {
    const match = OBJECT_PATH.exec(call.path);
    if (call.method !== 'GET' || match?.[3] !== 'pods' || match[5] !== 'log' || call.query.follow !== 'true') return false;
    const [namespace, name] = [match[2]!, match[4]!];
    let first: { status: number; body: string };
    try {
      first = this.podLog(namespace, name, call.query);
    } catch {
      return false; // the plain route answers the error
    }
    call.status = 200;
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write(first.body);
    const key = this.key('pods', namespace, name);
    const follows = this.follows.get(key) ?? new Set();
    this.follows.set(key, follows);
    const follow = {
      send: (entry: { time: string; text: string }) => res.write(this.logLine(entry, call.query)),
      end: () => {
        follows.delete(follow);
        res.end();
      },
    };
    follows.add(follow);
    res.on('close', () => follows.delete(follow));
    return true;
  }

  private podMetrics(namespace: string, name: string | undefined): { status: number; body: Json } {
    if (this.options.metricsApi === false) throw new HttpFailure(404, 'NotFound', 'the server could not find the requested resource');
    const item = (podName: string, usage: { cpu: string; memory: string }) => {
      const pod = this.objects.get(this.key('pods', namespace, podName));
      return {
        kind: 'PodMetrics',
        apiVersion: 'metrics.k8s.io/v1beta1',
        metadata: { name: podName, namespace, creationTimestamp: new Date().toISOString(), labels: pod?.metadata.labels ?? {} },
        timestamp: new Date().toISOString(),
        window: '15.012s',
        containers: (pod?.spec.containers ?? [{ name: 'main' }]).map((c: Json) => ({ name: c.name, usage })),
      };
    };
    if (!name) {
      const items = [...this.metrics.entries()]
        .filter(([key]) => key.startsWith(`pods/${namespace}/`))
        .map(([key, usage]) => item(key.split('/')[2]!, usage));
      return { status: 200, body: { kind: 'PodMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', metadata: {}, items } };
    }
    const usage = this.metrics.get(this.key('pods', namespace, name));
    if (!usage)
      throw new HttpFailure(404, 'NotFound', `podmetrics.metrics.k8s.io "${name}" not found`, {
        name,
        group: 'metrics.k8s.io',
        kind: 'pods',
      });
    return { status: 200, body: item(name, usage) };
  }
}

function matchesLabels(labels: Record<string, string> | undefined, wanted: Record<string, string> | undefined): boolean {
  return Object.entries(wanted ?? {}).every(([k, v]) => labels?.[k] === v);
}

/** Starts an emulator on 127.0.0.1 (port 0). */
export async function startKubeApi(options: KubeApiEmulatorOptions = {}): Promise<KubeApiEmulator> {
  return new KubeApiEmulator(options).start();
}
