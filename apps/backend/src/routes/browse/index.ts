import { type App, DomainError } from '@aop/core';
import type { AgentHost, AgentWorkspace } from '@aop/provisioner';
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { BackendConfig } from '../../config.js';
import { requireInternalKey, verifyUserContext } from '../../plugins/auth.js';
import { checkedAgentId, deployedAgent, requireCaller } from '../../services/agent-access.js';
import { onHost } from '../../services/agents.js';
import { GitWorkspace } from './git.js';
import { GitSyncBody, WriteFileBody } from './schemas.js';
import { DEFAULT_TREE_DEPTH, MAX_TREE_DEPTH, checkRelativePath, decodeContent } from './workspace.js';

export interface BrowseRoutesOptions {
  config: BackendConfig;
  host: AgentHost;
}

const MAX_COMMIT_MESSAGE = 1_000;
const DEFAULT_LOG_LIMIT = 20;
const MAX_LOG_LIMIT = 100;

const AgentQuery = Type.Object({
  agentId: Type.Optional(Type.String({ maxLength: 200 })),
  path: Type.Optional(Type.String({ maxLength: 4_096 })),
});

/** A whole number from a query string within [min, max], or 400 `Invalid <name>`. */
function intParam(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value)) throw new DomainError('INVALID_PARAMETER', { name });
  const n = Number(value);
  if (n < min || n > max) throw new DomainError('PARAMETER_OUT_OF_RANGE', { name, min, max });
  return n;
}

function boolParam(value: string | undefined, name: string): boolean {
  if (value === undefined || value === '' || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  throw new DomainError('INVALID_PARAMETER', { name });
}

/**
 * Workspace browse (spec §4.18, shapes ours): the files and git history of an agent's OpenClaw workspace, for its
 * owner. Every path is relative to the workspace and checked here first; the host's `workspace()` runs each operation
 * where the files are (a child process, `docker exec`, `pods/exec`) and confines paths there (`@aop/provisioner`
 * `workspace.ts`); `git.ts` builds the git calls. A provider without file access (hosting) answers 501.
 */
export async function browseRoutes(app: App, { config, host }: BrowseRoutesOptions): Promise<void> {
  app.addHook('onRequest', requireInternalKey(config.internalApiKey));
  app.addHook('onRequest', verifyUserContext(config.userContextSecret));

  /** One writer per workspace at a time (file writes and git commits); reads run freely. */
  const locks = new Map<string, Promise<unknown>>();
  function exclusive<T>(agentId: string, fn: () => Promise<T>): Promise<T> {
    const previous = locks.get(agentId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const settled = run.catch(() => undefined);
    locks.set(agentId, settled);
    void settled.then(() => {
      if (locks.get(agentId) === settled) locks.delete(agentId);
    });
    return run;
  }

  async function open(request: FastifyRequest, rawAgentId: unknown) {
    const agentId = checkedAgentId(rawAgentId);
    await deployedAgent(app.db, host, requireCaller(request.userContext?.userId), agentId);
    const openWorkspace = host.workspace?.bind(host);
    if (!openWorkspace) throw new DomainError('WORKSPACE_NOT_AVAILABLE', { provider: host.provider });
    const workspace = guarded(await onHost(() => openWorkspace(agentId)));
    return { agentId, workspace, git: new GitWorkspace(workspace) };
  }

  /** A git pathspec from `?path=`: checked like every path, and absent for the whole repository. */
  const gitPath = (value: string | undefined): string | null => {
    const segments = checkRelativePath(value, { allowRoot: true });
    return segments.length === 0 ? null : segments.join('/');
  };

  app.get(
    '/browse/tree',
    { schema: { tags: ['browse'], querystring: Type.Intersect([AgentQuery, Type.Object({ depth: Type.Optional(Type.String()) })]) } },
    async (request) => {
      const { agentId, workspace } = await open(request, request.query.agentId);
      const depth = intParam(request.query.depth, 'depth', DEFAULT_TREE_DEPTH, 1, MAX_TREE_DEPTH);
      const segments = checkRelativePath(request.query.path, { allowRoot: true });
      const tree = await workspace.tree(segments, depth);
      return { agentId, path: tree.path, depth, entries: tree.entries, truncated: tree.truncated };
    },
  );

  app.get('/browse/read', { schema: { tags: ['browse'], querystring: AgentQuery } }, async (request) => {
    const { agentId, workspace } = await open(request, request.query.agentId);
    const segments = checkRelativePath(request.query.path, { allowRoot: false });
    return { agentId, ...(await workspace.read(segments)) };
  });

  app.post(
    '/browse/write',
    {
      schema: { tags: ['browse'], body: WriteFileBody },
    },
    async (request) => {
      const body = request.body;
      const segments = checkRelativePath(body.path, { allowRoot: false });
      const data = decodeContent(body.content, body.encoding);
      const { agentId, workspace } = await open(request, body.agentId);
      const written = await exclusive(agentId, () => workspace.write(segments, data));
      return { success: true, agentId, ...written };
    },
  );

  app.get('/browse/git-status', { schema: { tags: ['browse'], querystring: AgentQuery } }, async (request) => {
    const { agentId, git } = await open(request, request.query.agentId);
    await git.requireRepository();
    return { agentId, ...(await git.status()) };
  });

  app.get(
    '/browse/git-diff',
    {
      schema: { tags: ['browse'], querystring: Type.Intersect([AgentQuery, Type.Object({ staged: Type.Optional(Type.String()) })]) },
    },
    async (request) => {
      const { agentId, git } = await open(request, request.query.agentId);
      const staged = boolParam(request.query.staged, 'staged');
      const path = gitPath(request.query.path);
      await git.requireRepository();
      return { agentId, staged, path, ...(await git.diff({ staged, path })) };
    },
  );

  app.get(
    '/browse/git-log',
    {
      schema: {
        tags: ['browse'],
        querystring: Type.Intersect([AgentQuery, Type.Object({ limit: Type.Optional(Type.String()), skip: Type.Optional(Type.String()) })]),
      },
    },
    async (request) => {
      const { agentId, git } = await open(request, request.query.agentId);
      const limit = intParam(request.query.limit, 'limit', DEFAULT_LOG_LIMIT, 1, MAX_LOG_LIMIT);
      const skip = intParam(request.query.skip, 'skip', 0, 0, 100_000);
      const path = gitPath(request.query.path);
      await git.requireRepository();
      const commits = await git.log({ limit, skip, path });
      return { agentId, path, limit, skip, commits };
    },
  );

  app.post(
    '/browse/git-sync',
    {
      schema: { tags: ['browse'], body: GitSyncBody },
    },
    async (request) => {
      const body = request.body;
      const message = commitMessage(body.message);
      const { agentId, git } = await open(request, body.agentId);
      await git.requireRepository();
      const ctx = request.userContext;
      const userId = ctx?.userId ?? 'user';
      // The commit is the owner's: their email when the web layer sent one, else a non-routable address.
      const author = { name: ctx?.email ?? userId, email: ctx?.email ?? `${userId}@users.noreply.invalid` };
      const result = await exclusive(agentId, () => git.sync(message, author));
      return { success: true, agentId, ...result };
    },
  );
}

/** The workspace's own refusals pass as they are; a provider failure (engine or API unreachable) reads as one. */
function guarded(access: AgentWorkspace): AgentWorkspace {
  return {
    tree: (segments, depth) => onHost(() => access.tree(segments, depth)),
    read: (segments) => onHost(() => access.read(segments)),
    write: (segments, data) => onHost(() => access.write(segments, data)),
    isRepository: () => onHost(() => access.isRepository()),
    git: (args, options) => onHost(() => access.git(args, options)),
  };
}

/** A commit message the schema let through as a string (or null): absent or empty gets the default one. */
function commitMessage(value: string | null | undefined): string {
  if (value === undefined || value === null || value === '') return `Workspace sync ${new Date().toISOString()}`;
  if (value.includes('\0') || value.trim() === '') throw new DomainError('INVALID_MESSAGE');
  if (value.length > MAX_COMMIT_MESSAGE) throw new DomainError('FIELD_TOO_LONG', { field: 'message', max: MAX_COMMIT_MESSAGE });
  return value.trim();
}
