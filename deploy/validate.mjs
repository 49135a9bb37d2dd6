#!/usr/bin/env node
// `npm run deploy:check`: checks the deployment files without a Docker engine or a cluster, in about a second.
//
//   Dockerfile                 the three service targets, a non-root user, `npm ci --omit=dev`, health checks on the
//                              services' own health routes, start commands that are the apps' built server.ts
//   deploy/compose.yaml        interpolated with deploy/.env.example like `docker compose config`, then checked
//                              against the Compose Specification's JSON schema (the one the `dclint` package ships,
//                              when installed) and for references between services
//   deploy/kubernetes/base     every object against the Kubernetes API's own types (the models @kubernetes/client-node
//                              generates from the Kubernetes OpenAPI document: unknown fields, wrong types, missing
//                              required fields), then the references between objects, the Role against the API calls
//                              packages/provisioner/src/kubernetes/host.ts makes, and the agents' NetworkPolicies
//   env files and manifests    every variable set is one the apps read (their config schemas), and the secrets
//                              production requires are in each env file
//
// Options: --deploy-dir <dir> checks another copy of deploy/ (the repository's code is still read from here);
// --dockerfile <file>; --compose-schema <file> uses that JSON schema for Compose. Exits 1 with every problem listed.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Ajv from 'ajv';
import YAML from 'yaml';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: options } = parseArgs({
  options: {
    'deploy-dir': { type: 'string', default: join(ROOT, 'deploy') },
    dockerfile: { type: 'string', default: join(ROOT, 'Dockerfile') },
    'compose-schema': { type: 'string' },
  },
});
const DEPLOY = resolve(options['deploy-dir']);
const KUBE_BASE = join(DEPLOY, 'kubernetes', 'base');

const problems = [];
const notes = [];
const problem = (where, message) => problems.push(`${where}: ${message}`);
const rel = (file) => relative(ROOT, file) || file;
const read = (file) => readFileSync(file, 'utf8');

// ---------------------------------------------------------------------------------------------- what the apps read

/** Every environment variable a service reads: the keys of the TypeBox env schemas of the apps and of packages/core. */
function appVariables() {
  const sources = ['packages/core/src', 'apps/web/src', 'apps/backend/src', 'apps/summarizer/src'].flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('.ts') && !/\.test(-support)?\.ts$/.test(f))
      .map((f) => join(ROOT, dir, f)),
  );
  const names = new Set();
  for (const file of sources) {
    const text = read(file);
    if (!text.includes('EnvSchema')) continue;
    // A key whose value is a schema: `PORT: Env.port(3000)`, `LLM_API_KEY: Env.optional(…)`, `X: Type.Number(…)`, `usdPrice(…)`.
    for (const match of text.matchAll(/^\s+([A-Z][A-Z0-9_]*[A-Z0-9]):\s*(Env\.|Type\.|[a-z]\w*\()/gm)) names.add(match[1]);
  }
  if (names.size < 100) problem('config modules', `found only ${names.size} variables: has the config layout changed?`);
  return names;
}
const KNOWN = appVariables();

/** The secrets production refuses to start without: PLATFORM_SECRETS (core config) and BRIDGE_SECRET (bridge.config.ts). */
function requiredSecrets() {
  const core = read(join(ROOT, 'packages/core/src/config.ts'));
  const block = /PLATFORM_SECRETS = \{([^}]*)\}/.exec(core)?.[1] ?? '';
  const names = [...block.matchAll(/([A-Z_]+):/g)].map((m) => m[1]);
  if (names.length === 0) problem('packages/core/src/config.ts', 'PLATFORM_SECRETS not found');
  const bridge = read(join(ROOT, 'apps/web/src/modules/bridge/bridge.config.ts'));
  if (/BRIDGE_SECRET: required in production/.test(bridge)) names.push('BRIDGE_SECRET');
  return names;
}
const REQUIRED_SECRETS = requiredSecrets();

/** KEY=VALUE lines of an env file (comments and blank lines skipped; no inline comments, as Compose reads them). */
function parseEnvFile(file) {
  const env = new Map();
  read(file)
    .split('\n')
    .forEach((line, i) => {
      if (/^\s*(#|$)/.test(line)) return;
      const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
      if (!m) problem(`${rel(file)}:${i + 1}`, `not a KEY=VALUE line: ${JSON.stringify(line)}`);
      else if (/\s#/.test(m[2])) problem(`${rel(file)}:${i + 1}`, 'a comment after a value: put it on its own line');
      else env.set(m[1], m[2]);
    });
  return env;
}

// ---------------------------------------------------------------------------------------------- Dockerfile

const HEALTH = { web: '/api/health', backend: '/health', summarizer: '/health' };

function checkDockerfile() {
  const file = options.dockerfile;
  const where = rel(file);
  // Continuation lines joined, comments dropped: one instruction per entry.
  const instructions = read(file)
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => l.trim() && !l.trim().startsWith('#'))
    .map((l) => l.trim());
  const stages = new Map();
  let current = null;
  for (const line of instructions) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) {
      current = { name: from[2] ?? `#${stages.size}`, parent: from[1], lines: [] };
      stages.set(current.name, current);
    } else if (current) current.lines.push(line);
  }
  /** A stage's instructions, those of the stages it is built FROM first. */
  const chain = (name) => {
    const stage = stages.get(name);
    return stage ? [...chain(stage.parent), ...stage.lines] : [];
  };
  if (!instructions.some((l) => /^RUN\b.*npm ci\b.*--omit=dev/.test(l))) problem(where, 'no `npm ci --omit=dev` stage');
  for (const [service, path] of Object.entries(HEALTH)) {
    if (!stages.has(service)) {
      problem(where, `no \`${service}\` target`);
      continue;
    }
    const lines = chain(service);
    const user = lines.filter((l) => /^USER\s/i.test(l)).at(-1);
    if (!user || /^USER\s+(root|0)(:|\s|$)/i.test(user)) problem(where, `target ${service} runs as root`);
    const health = lines.filter((l) => /^HEALTHCHECK\s/i.test(l)).at(-1) ?? '';
    if (!health.includes(`+'${path}'`)) problem(where, `target ${service}: HEALTHCHECK does not ask ${path}`);
    const cmd = lines.filter((l) => /^CMD\s/i.test(l)).at(-1) ?? '';
    if (!cmd.includes(`apps/${service}/dist/server.js`)) problem(where, `target ${service}: CMD is not apps/${service}/dist/server.js`);
    if (!existsSync(join(ROOT, `apps/${service}/src/server.ts`))) problem(where, `apps/${service}/src/server.ts does not exist`);
  }
  if (!existsSync(join(ROOT, 'packages/db/src/cli.ts'))) problem(where, 'packages/db/src/cli.ts (the migration command) is gone');
  return stages;
}

// ---------------------------------------------------------------------------------------------- Compose

/** `docker compose config`'s interpolation: $$, ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, ${VAR:+alt}. */
function interpolate(value, env, used, where) {
  if (typeof value === 'string') {
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
      (all, name, op, arg, bare) => {
        if (all === '$$') return '$';
        const key = name ?? bare;
        used.add(key);
        const set = env.has(key);
        const val = env.get(key) ?? '';
        const empty = val === '';
        switch (op) {
          case ':-':
            return empty ? arg : val;
          case '-':
            return set ? val : arg;
          case ':?':
          case '?':
            // Required by design: the example leaves it for the operator to fill in, so a stand-in value is checked.
            if (!set) problem(where, `\${${key}${op}…} is required but deploy/.env.example does not list ${key}`);
            return empty ? `required-${key.toLowerCase()}` : val;
          case ':+':
            return empty ? '' : arg;
          case '+':
            return set ? arg : '';
          default:
            if (!set) problem(where, `\${${key}} is unset in deploy/.env.example and has no default: Compose would use ""`);
            return val;
        }
      },
    );
  }
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env, used, where));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env, used, where)]));
  }
  return value;
}

function composeSchema() {
  if (options['compose-schema']) return JSON.parse(read(options['compose-schema']));
  try {
    const require = createRequire(join(ROOT, 'package.json'));
    return JSON.parse(read(join(dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json')));
  } catch {
    return null;
  }
}

function checkCompose(stages) {
  const file = join(DEPLOY, 'compose.yaml');
  const where = rel(file);
  const envExample = join(DEPLOY, '.env.example');
  const env = parseEnvFile(envExample);
  let doc;
  try {
    doc = YAML.parse(read(file), { merge: true, prettyErrors: true });
  } catch (err) {
    problem(where, `not YAML: ${err.message}`);
    return;
  }
  const used = new Set();
  const config = interpolate(doc, env, used, where);

  const schema = composeSchema();
  if (schema) {
    // The schema names draft-07 by an https URI Ajv does not register under; Ajv's default draft is draft-07.
    const { $schema: _draft, ...body } = schema;
    const ajv = new Ajv({ allErrors: true, strict: false });
    const validate = ajv.compile(body);
    if (!validate(config)) {
      for (const e of validate.errors ?? []) problem(where, `schema: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
    }
    notes.push(`compose: ${Object.keys(config.services ?? {}).length} services checked against the Compose Specification schema`);
  } else {
    notes.push('compose: SKIPPED the Compose Specification schema (install the `dclint` package, or pass --compose-schema)');
  }

  const services = config.services ?? {};
  for (const [name, service] of Object.entries(services)) {
    const at = `${where} services.${name}`;
    const deps = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
    for (const dep of deps) if (!services[dep]) problem(at, `depends_on names no service: ${dep}`);
    const netService = /^service:(.+)$/.exec(service.network_mode ?? '')?.[1];
    if (netService && !services[netService]) problem(at, `network_mode names no service: ${netService}`);
    if (netService && service.ports) problem(at, 'a service in another service’s network cannot publish ports');
    const envFiles = [service.env_file ?? []].flat().map((f) => (typeof f === 'string' ? f : f.path));
    for (const envFile of envFiles) {
      // deploy/.env is the operator's copy of deploy/.env.example (ignored by git).
      const path = resolve(DEPLOY, envFile);
      if (!existsSync(path) && !existsSync(`${path}.example`)) problem(at, `env_file ${envFile} has no ${envFile}.example beside it`);
    }
    const target = service.build?.target;
    if (service.build) {
      // deploy/ sits in the repository root, which holds the Dockerfile.
      if (resolve(DEPLOY, service.build.context ?? '.') !== resolve(DEPLOY, '..')) problem(at, 'build context is not the repository root');
      if ((service.build.dockerfile ?? 'Dockerfile') !== 'Dockerfile') problem(at, 'not the repository’s Dockerfile');
      if (!stages.has(target)) problem(at, `build target ${target} is not a stage of the Dockerfile`);
    }
    // Our own services: every variable they get is one the apps read.
    if (HEALTH[target]) {
      const environment = Array.isArray(service.environment)
        ? service.environment.map((e) => e.split('=')[0])
        : Object.keys(service.environment ?? {});
      for (const key of environment) if (!KNOWN.has(key)) problem(at, `environment: no service reads ${key}`);
      if (envFiles.length && target === 'summarizer') problem(at, 'the summarizer needs no platform secret: give it no env_file');
    }
    for (const [dep, cond] of Object.entries(Array.isArray(service.depends_on) ? {} : (service.depends_on ?? {}))) {
      const other = services[dep];
      if (cond?.condition === 'service_healthy' && other && !other.healthcheck && !HEALTH[other.build?.target]) {
        problem(at, `waits for ${dep} to be healthy, which has no health check`);
      }
    }
  }
  for (const name of ['web', 'backend', 'summarizer', 'postgres', 'redis']) if (!services[name]) problem(where, `no ${name} service`);
  const backendEnv = services.backend?.environment ?? {};
  if (!String(backendEnv.DATABASE_URL ?? '').startsWith('postgres://')) problem(where, 'the backend is not on Postgres');

  for (const [key] of env) {
    if (!KNOWN.has(key) && !used.has(key)) problem(rel(envExample), `${key}: neither a service nor compose.yaml reads it`);
  }
  for (const key of REQUIRED_SECRETS) if (!env.has(key)) problem(rel(envExample), `${key} is required in production and missing`);
}

// ---------------------------------------------------------------------------------------------- Kubernetes types

const kubeRequire = createRequire(join(ROOT, 'packages/provisioner/package.json'));
const MODELS = join(dirname(kubeRequire.resolve('@kubernetes/client-node/package.json')), 'dist', 'gen', 'models');
const OPENAPI_VERSION = /OpenAPI spec version: (\S+)/.exec(read(join(MODELS, 'V1Pod.js')))?.[1] ?? 'unknown';
const modelCache = new Map();

/** A model's fields (`attributeTypeMap`) and which are required (no `?` in its declaration file). */
async function model(name) {
  if (!modelCache.has(name)) {
    const file = join(MODELS, `${name}.js`);
    if (!existsSync(file)) {
      modelCache.set(name, null);
    } else {
      const cls = (await import(pathToFileURL(file).href))[name];
      const declared = read(join(MODELS, `${name}.d.ts`));
      const required = new Set([...declared.matchAll(/^\s+'([^']+)':\s/gm)].map((m) => m[1]));
      const fields = new Map(cls.getAttributeTypeMap().map((a) => [a.baseName, a]));
      modelCache.set(name, { fields, required });
    }
  }
  return modelCache.get(name);
}

/** Checks a value against a client-node type string: primitives, IntOrString, Array<T>, { [key: string]: T; }, models. */
async function checkType(value, type, format, path, where) {
  const wrong = (what) => problem(where, `${path}: expected ${what}, got ${JSON.stringify(value)?.slice(0, 60)}`);
  if (type === 'any' || type === 'object') return;
  if (type === 'string' || type === 'Date') return typeof value === 'string' || wrong('a string');
  if (type === 'boolean') return typeof value === 'boolean' || wrong('a boolean');
  if (type === 'number') {
    if (typeof value !== 'number') return wrong('a number');
    return !/^int/.test(format ?? '') || Number.isInteger(value) || wrong('an integer');
  }
  if (type === 'IntOrString') return typeof value === 'string' || Number.isInteger(value) || wrong('an integer or a string');
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return wrong('a list');
    for (const [i, item] of value.entries()) await checkType(item, array[1], '', `${path}[${i}]`, where);
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (!value || typeof value !== 'object' || Array.isArray(value)) return wrong('a map');
    for (const [k, v] of Object.entries(value)) await checkType(v, map[1], '', `${path}.${k}`, where);
    return;
  }
  const m = await model(type);
  if (!m) return problem(where, `${path}: the validator does not know the type ${type}`);
  if (!value || typeof value !== 'object' || Array.isArray(value)) return wrong(`an object (${type})`);
  for (const key of m.required) if (value[key] === undefined) problem(where, `${path}: ${key} is required (${type})`);
  for (const [key, v] of Object.entries(value)) {
    const field = m.fields.get(key);
    if (!field) problem(where, `${path}.${key}: no such field in ${type}`);
    else if (v !== null) await checkType(v, field.type, field.format, `${path}.${key}`, where);
  }
}

/** The API group each kind used here belongs to (a kind under the wrong group is refused by the API server). */
const KIND_GROUPS = {
  Namespace: '',
  ServiceAccount: '',
  Service: '',
  Secret: '',
  ConfigMap: '',
  Deployment: 'apps',
  Job: 'batch',
  HorizontalPodAutoscaler: 'autoscaling',
  PodDisruptionBudget: 'policy',
  Ingress: 'networking.k8s.io',
  NetworkPolicy: 'networking.k8s.io',
  Role: 'rbac.authorization.k8s.io',
  RoleBinding: 'rbac.authorization.k8s.io',
};
const CLUSTER_SCOPED = new Set(['Namespace']);
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

async function checkKubeObject(obj, where) {
  const { apiVersion, kind } = obj ?? {};
  if (typeof apiVersion !== 'string' || typeof kind !== 'string') return problem(where, 'apiVersion and kind are required');
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  if (!(kind in KIND_GROUPS)) return problem(where, `${kind}: not a kind this validator knows; add it to KIND_GROUPS`);
  if (KIND_GROUPS[kind] !== group) return problem(where, `${kind} is in the API group "${KIND_GROUPS[kind]}", not "${group}"`);
  const name = `${version.charAt(0).toUpperCase()}${version.slice(1)}${kind}`;
  if (!(await model(name))) return problem(where, `${apiVersion} ${kind}: no such version in Kubernetes ${OPENAPI_VERSION}`);
  await checkType(obj, name, '', kind, where);
  const meta = obj.metadata ?? {};
  if (!DNS_LABEL.test(meta.name ?? '') || meta.name.length > 63)
    problem(where, `metadata.name ${JSON.stringify(meta.name)} is not a DNS label`);
  if (!CLUSTER_SCOPED.has(kind) && !meta.namespace) problem(where, `${kind} ${meta.name}: no namespace (the base sets it on every object)`);
}

// ---------------------------------------------------------------------------------------------- Kubernetes base

async function loadKubeBase() {
  const file = join(KUBE_BASE, 'kustomization.yaml');
  const kustomization = YAML.parse(read(file));
  for (const key of Object.keys(kustomization)) {
    if (!['apiVersion', 'kind', 'resources'].includes(key)) {
      problem(rel(file), `${key}: this validator renders \`resources\` only; teach it ${key} before using it in the base`);
    }
  }
  const listed = kustomization.resources ?? [];
  for (const f of readdirSync(KUBE_BASE)) {
    if (/\.ya?ml$/.test(f) && f !== 'kustomization.yaml' && !listed.includes(f)) problem(rel(file), `${f} is not listed in resources`);
  }
  const objects = [];
  for (const resource of listed) {
    const path = join(KUBE_BASE, resource);
    if (!existsSync(path)) {
      problem(rel(file), `resource ${resource} does not exist`);
      continue;
    }
    const docs = YAML.parseAllDocuments(read(path));
    for (const [i, doc] of docs.entries()) {
      const where = `${rel(path)}#${i + 1}`;
      if (doc.errors.length) {
        problem(where, `not YAML: ${doc.errors[0].message}`);
        continue;
      }
      const obj = doc.toJS();
      if (obj === null) continue;
      await checkKubeObject(obj, where);
      objects.push({ obj, where });
    }
  }
  const seen = new Set();
  for (const { obj, where } of objects) {
    const id = `${obj.kind}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name}`;
    if (seen.has(id)) problem(where, `${id} is defined twice`);
    seen.add(id);
  }
  return objects;
}

const matches = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

/** The RBAC rules host.ts needs: each API call it makes, as (group, resource, verb). */
function providerPermissions() {
  const source = read(join(ROOT, 'packages/provisioner/src/kubernetes/host.ts'));
  const groups = { apps: 'apps', core: '', batch: 'batch' };
  const verbs = { create: 'create', read: 'get', list: 'list', patch: 'patch', replace: 'update', delete: 'delete' };
  const need = new Set();
  for (const m of source.matchAll(/this\.(apps|core|batch)\.(create|read|list|patch|replace|delete)Namespaced([A-Za-z]+)\(/g)) {
    const kind = m[3];
    const resource =
      kind === 'PodLog'
        ? 'pods/log'
        : `${kind.charAt(0).toLowerCase()}${kind.slice(1).replace(/([A-Z])/g, (c) => c.toLowerCase())}s`.replace(/ys$/, 'ies');
    need.add(`${groups[m[1]]}|${resource}|${verbs[m[2]]}`);
  }
  // Following a pod's log is a plain GET of .../pods/<pod>/log (streamPodLog).
  if (/\/pods\/\$\{podName\}\/log/.test(source)) need.add('|pods/log|get');
  // Exec is a WebSocket upgrade: authorized as `create` on recent clusters, `get` on older ones.
  if (/new Exec\(/.test(source)) for (const verb of ['get', 'create']) need.add(`|pods/exec|${verb}`);
  if (/getNamespacedCustomObject\(\{[^}]*group: 'metrics\.k8s\.io'[^}]*plural: 'pods'/s.test(source)) need.add('metrics.k8s.io|pods|get');
  if (need.size < 10) problem('packages/provisioner/src/kubernetes/host.ts', `found only ${need.size} API calls: has the client changed?`);
  return need;
}

function checkKubeReferences(objects) {
  const all = objects.map((o) => o.obj);
  const find = (kind, namespace, name) =>
    all.find((o) => o.kind === kind && o.metadata?.namespace === namespace && o.metadata?.name === name);
  const whereOf = (obj) => objects.find((o) => o.obj === obj)?.where ?? '?';
  const deployments = all.filter((o) => o.kind === 'Deployment');
  const secretExample = parseEnvFile(join(DEPLOY, 'kubernetes', 'aop.env.example'));
  const byComponent = Object.fromEntries(deployments.map((d) => [d.metadata.labels?.['app.kubernetes.io/component'], d]));

  /** Pod specs: Deployments' and Jobs' templates. */
  for (const owner of all.filter((o) => o.kind === 'Deployment' || o.kind === 'Job')) {
    const where = whereOf(owner);
    const ns = owner.metadata.namespace;
    const pod = owner.spec?.template;
    if (owner.kind === 'Deployment' && !matches(owner.spec?.selector?.matchLabels, pod?.metadata?.labels)) {
      problem(where, 'the selector does not match the pod template’s labels');
    }
    const sa = pod?.spec?.serviceAccountName;
    if (sa && !find('ServiceAccount', ns, sa)) problem(where, `serviceAccountName ${sa}: no such ServiceAccount`);
    const sc = pod?.spec?.securityContext ?? {};
    if (sc.runAsNonRoot !== true || !(sc.runAsUser > 0)) problem(where, 'the pod does not run as a non-root user');
    for (const c of pod?.spec?.containers ?? []) {
      const component = owner.metadata.labels?.['app.kubernetes.io/component'];
      const service = component === 'migrate' ? 'web' : component;
      if (!/^aop-(web|backend|summarizer)$/.test(c.image)) problem(where, `${c.name}: image ${c.image} is not one of the Dockerfile's`);
      else if (c.image !== `aop-${service}`) problem(where, `${c.name}: the ${component} runs image ${c.image}`);
      if (c.securityContext?.allowPrivilegeEscalation !== false) problem(where, `${c.name}: allowPrivilegeEscalation is not false`);
      for (const e of c.env ?? []) {
        if (!KNOWN.has(e.name)) problem(where, `${c.name}: env ${e.name}: no service reads it`);
        const ref = e.valueFrom?.secretKeyRef;
        if (ref && ref.name === 'aop-env' && !secretExample.has(ref.key))
          problem(where, `${c.name}: aop-env has no key ${ref.key} in aop.env.example`);
      }
      for (const from of c.envFrom ?? []) {
        if (from.secretRef && from.secretRef.name !== 'aop-env')
          problem(where, `${c.name}: envFrom names ${from.secretRef.name}, not aop-env`);
      }
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        const get = c[probe]?.httpGet;
        if (!get) continue;
        if (get.path !== HEALTH[service]) problem(where, `${c.name}: ${probe} asks ${get.path}, not ${HEALTH[service]}`);
        const ports = (c.ports ?? []).map((p) => p.name);
        if (typeof get.port === 'string' && !ports.includes(get.port))
          problem(where, `${c.name}: ${probe} port ${get.port} is not a container port`);
      }
    }
  }

  for (const svc of all.filter((o) => o.kind === 'Service')) {
    const where = whereOf(svc);
    const target = deployments.find(
      (d) => d.metadata.namespace === svc.metadata.namespace && matches(svc.spec?.selector, d.spec?.template?.metadata?.labels),
    );
    if (!target) {
      problem(where, 'the selector matches no Deployment’s pods');
      continue;
    }
    const ports = target.spec.template.spec.containers.flatMap((c) => c.ports ?? []);
    for (const p of svc.spec.ports ?? []) {
      const ok =
        typeof p.targetPort === 'string'
          ? ports.some((cp) => cp.name === p.targetPort)
          : ports.some((cp) => cp.containerPort === (p.targetPort ?? p.port));
      if (!ok) problem(where, `port ${p.name ?? p.port}: targetPort ${p.targetPort} is no container port of ${target.metadata.name}`);
    }
  }

  // The URLs the services are given point at Services that exist, on their ports.
  for (const d of deployments) {
    for (const e of d.spec.template.spec.containers.flatMap((c) => c.env ?? [])) {
      const url = /^https?:\/\/([a-z0-9-]+)\.([a-z0-9-]+)\.svc(?:\.cluster\.local)?:(\d+)/.exec(e.value ?? '');
      if (!url) continue;
      const svc = find('Service', url[2], url[1]);
      if (!svc) problem(whereOf(d), `${e.name}: no Service ${url[2]}/${url[1]}`);
      else if (!svc.spec.ports.some((p) => p.port === Number(url[3])))
        problem(whereOf(d), `${e.name}: Service ${url[1]} has no port ${url[3]}`);
    }
  }
  const busUrl = secretExample.get('UNDERGROUND_BUS_URL');
  if (busUrl && !busUrl.startsWith('http://aop-backend.aop.svc:3001/'))
    problem('aop.env.example', 'UNDERGROUND_BUS_URL is not the backend Service');

  for (const ing of all.filter((o) => o.kind === 'Ingress')) {
    for (const path of (ing.spec?.rules ?? []).flatMap((r) => r.http?.paths ?? [])) {
      const b = path.backend?.service;
      const svc = b && find('Service', ing.metadata.namespace, b.name);
      if (!svc) problem(whereOf(ing), `path ${path.path}: no Service ${b?.name}`);
      else if (!svc.spec.ports.some((p) => (b.port.name ? p.name === b.port.name : p.port === b.port.number))) {
        problem(whereOf(ing), `path ${path.path}: Service ${b.name} has no port ${b.port.name ?? b.port.number}`);
      }
    }
  }
  for (const hpa of all.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const ref = hpa.spec.scaleTargetRef;
    if (!find(ref.kind, hpa.metadata.namespace, ref.name)) problem(whereOf(hpa), `scaleTargetRef ${ref.kind}/${ref.name} does not exist`);
  }
  for (const pdb of all.filter((o) => o.kind === 'PodDisruptionBudget')) {
    const ok = deployments.some(
      (d) => d.metadata.namespace === pdb.metadata.namespace && matches(pdb.spec?.selector?.matchLabels, d.spec.template.metadata.labels),
    );
    if (!ok) problem(whereOf(pdb), 'the selector matches no Deployment’s pods');
  }

  // The web: at least two replicas, autoscaled.
  const web = byComponent.web;
  if (!web || (web.spec.replicas ?? 1) < 2) problem('web.yaml', 'the web Deployment has fewer than 2 replicas');
  const webHpa = all.find((o) => o.kind === 'HorizontalPodAutoscaler' && o.spec.scaleTargetRef.name === web?.metadata.name);
  if (!webHpa || webHpa.spec.minReplicas < 2) problem('web.yaml', 'no HorizontalPodAutoscaler with minReplicas >= 2 for the web');

  // The backend: the kubernetes provider, in the namespace its Role covers, as the ServiceAccount the Role is bound to.
  const backend = byComponent.backend;
  const backendEnv = Object.fromEntries((backend?.spec.template.spec.containers[0].env ?? []).map((e) => [e.name, e.value]));
  if (backendEnv.PROVISIONER !== 'kubernetes') problem('backend.yaml', 'PROVISIONER is not kubernetes');
  const agentsNs = backendEnv.KUBE_NAMESPACE;
  const role = all.find((o) => o.kind === 'Role' && o.metadata.namespace === agentsNs);
  if (!role) problem('agent-host-rbac.yaml', `no Role in the agents' namespace ${agentsNs}`);
  else {
    const binding = all.find(
      (o) => o.kind === 'RoleBinding' && o.roleRef?.name === role.metadata.name && o.metadata.namespace === agentsNs,
    );
    const sa = backend?.spec.template.spec.serviceAccountName;
    const bound = binding?.subjects?.some(
      (s) => s.kind === 'ServiceAccount' && s.name === sa && s.namespace === backend.metadata.namespace,
    );
    if (!bound) problem(whereOf(role), `no RoleBinding gives it to the backend's ServiceAccount ${sa}`);
    const granted = new Set();
    for (const rule of role.rules ?? []) {
      for (const g of rule.apiGroups ?? [])
        for (const r of rule.resources ?? []) for (const v of rule.verbs ?? []) granted.add(`${g}|${r}|${v}`);
    }
    const need = providerPermissions();
    for (const n of need)
      if (!granted.has(n))
        problem(whereOf(role), `the kubernetes provider needs ${n.replaceAll('|', ' ')} (host.ts), which the Role lacks`);
    for (const g of granted) if (!need.has(g)) problem(whereOf(role), `grants ${g.replaceAll('|', ' ')}, which host.ts never uses`);
    if ([...granted].some((g) => g.includes('*'))) problem(whereOf(role), 'wildcards are not allowed');
  }
  if (!all.some((o) => o.kind === 'Namespace' && o.metadata.name === agentsNs)) problem('namespaces.yaml', `no Namespace ${agentsNs}`);

  checkAgentNetworkPolicies(all, agentsNs, whereOf);
  if (
    !all.some((o) => o.kind === 'Job' && o.spec?.template?.spec?.containers?.[0]?.command?.join(' ') === 'node packages/db/dist/cli.js')
  ) {
    problem('migrate-job.yaml', 'no Job runs the migrations (node packages/db/dist/cli.js)');
  }
  for (const key of [...REQUIRED_SECRETS, 'DATABASE_URL', 'REDIS_URL', 'PLATFORM_DEVICE_KEY']) {
    if (!secretExample.has(key)) problem('kubernetes/aop.env.example', `${key} is required and missing`);
  }
  for (const [key] of secretExample) if (!KNOWN.has(key)) problem('kubernetes/aop.env.example', `${key}: no service reads it`);
}

/** Agents: denied by default; in only from web and backend on the gateway port; out to DNS, public addresses, the bus. */
function checkAgentNetworkPolicies(all, ns, whereOf) {
  const manifests = read(join(ROOT, 'packages/provisioner/src/kubernetes/manifests.ts'));
  const gatewayPort = Number(/GATEWAY_PORT = (\d+)/.exec(manifests)?.[1]);
  const policies = all.filter((o) => o.kind === 'NetworkPolicy' && o.metadata.namespace === ns);
  const deny = policies.find((p) => Object.keys(p.spec.podSelector ?? {}).length === 0 && !p.spec.ingress && !p.spec.egress);
  if (!deny || !['Ingress', 'Egress'].every((t) => deny.spec.policyTypes?.includes(t))) {
    problem('agent-network-policies.yaml', `no default-deny (Ingress and Egress) policy for every pod in ${ns}`);
  }
  for (const p of policies) {
    const where = whereOf(p);
    // The pod labels the provider really sets (manifests.ts: KUBE_LABELS, MANAGED_BY, the `gateway` component).
    for (const [k, v] of Object.entries(p.spec.podSelector?.matchLabels ?? {})) {
      const known =
        (k === 'app.kubernetes.io/managed-by' && manifests.includes(`MANAGED_BY = '${v}'`)) ||
        (k === 'app.kubernetes.io/name' && manifests.includes(`[KUBE_LABELS.name]: '${v}'`)) ||
        (k === 'app.kubernetes.io/component' && manifests.includes(`'${v}')`));
      if (!known) problem(where, `podSelector ${k}=${v} is not a label the kubernetes provider puts on agent pods`);
    }
    for (const rule of p.spec.ingress ?? []) {
      for (const peer of rule.from ?? []) {
        if (peer.ipBlock || !peer.namespaceSelector || !peer.podSelector)
          problem(where, 'ingress from anything but chosen pods of the platform');
      }
      if (!(rule.ports ?? []).length || rule.ports.some((port) => port.port !== gatewayPort))
        problem(where, `ingress beyond the gateway port ${gatewayPort}`);
    }
    for (const rule of p.spec.egress ?? []) {
      for (const peer of rule.to ?? []) {
        if (peer.ipBlock) {
          const except = new Set(peer.ipBlock.except ?? []);
          const privateRanges = peer.ipBlock.cidr.includes(':')
            ? ['fc00::/7', 'fe80::/10']
            : ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10'];
          for (const range of privateRanges)
            if (!except.has(range)) problem(where, `egress to ${peer.ipBlock.cidr} does not exclude ${range}`);
        } else if (!peer.namespaceSelector || !peer.podSelector) {
          problem(where, 'egress to whole namespaces or every pod');
        } else if (!rule.ports?.length) {
          problem(where, 'egress to pods on every port');
        }
      }
    }
  }
}

/** When kubectl is here, its kustomize must render the same objects as this validator loaded. */
function compareWithKubectl(objects) {
  const which = spawnSync('kubectl', ['kustomize', KUBE_BASE], { encoding: 'utf8', timeout: 20_000 });
  if (which.error) {
    notes.push('kubernetes: kubectl not found; `kubectl kustomize` comparison skipped');
    return;
  }
  if (which.status !== 0) return problem(rel(KUBE_BASE), `kubectl kustomize failed: ${which.stderr.trim()}`);
  const rendered = YAML.parseAllDocuments(which.stdout).map((d) => d.toJS());
  const id = (o) => `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
  const ours = new Map(objects.map(({ obj }) => [id(obj), JSON.stringify(obj)]));
  const theirs = new Map(rendered.map((o) => [id(o), JSON.stringify(o)]));
  for (const key of new Set([...ours.keys(), ...theirs.keys()])) {
    // kustomize orders keys its own way: compare the parsed objects, not the text.
    if (!ours.has(key) || !theirs.has(key) || !sameJson(JSON.parse(ours.get(key)), JSON.parse(theirs.get(key)))) {
      problem(rel(KUBE_BASE), `kubectl kustomize renders ${key} differently`);
    }
  }
  notes.push(`kubernetes: kubectl kustomize renders the same ${theirs.size} objects`);
}

function sameJson(a, b) {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => sameJson(v, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => sameJson(a[k], b[k]));
  }
  return a === b;
}

// ---------------------------------------------------------------------------------------------- run

const started = Date.now();
const stages = checkDockerfile();
checkCompose(stages);
const objects = await loadKubeBase();
checkKubeReferences(objects);
compareWithKubectl(objects);
notes.unshift(`kubernetes: ${objects.length} objects checked against the Kubernetes ${OPENAPI_VERSION} API types`);

for (const note of notes) console.log(note);
if (problems.length) {
  console.error(`\n${problems.length} problem${problems.length === 1 ? '' : 's'} in the deployment files:`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(`deploy:check: Dockerfile, deploy/compose.yaml and deploy/kubernetes/base are valid (${Date.now() - started} ms)`);
