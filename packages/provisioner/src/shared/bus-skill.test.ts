import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readFile, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM build script without type declarations
import { buildSkills } from '../../scripts/build-skills.mjs';
import { BUS_SKILL_DIR, busSkillFiles } from './bus-skill.js';
import { startDockerEngine } from '../docker/docker-engine.test-support.js';
import { DockerAgentHost, dockerContainerName, dockerStateVolumeName } from '../docker/host.js';
import { installFakeRuntime } from './fake-gateway.test-support.js';
import type { AgentSpec } from '../host.js';
import { startKubeApi } from '../kubernetes/kube-api.test-support.js';
import { KubernetesAgentHost, kubeAgentName } from '../kubernetes/host.js';
import { LocalAgentHost } from '../local/host.js';

// The `underground-bus` skill: its script is bundled into one self-contained file, and every agent's workspace gets
// the skill on create and again on repair (rewritten, never through a link the agent left there).

let work: string;
const key = randomBytes(32);
const cleanups: Array<() => Promise<unknown>> = [];
let n = 0;

function spec(): AgentSpec {
  n += 1;
  return {
    agentId: `agt_skill${n}`,
    userId: 'usr_1',
    plan: 'solo',
    config: { gateway: { bind: 'lan', auth: { mode: 'token' } } },
    gatewayToken: `gw-token-${n}-${randomBytes(8).toString('hex')}`,
  };
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'aop-bus-skill-'));
});

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
});

describe('underground-bus skill', () => {
  it('builds send.mjs into one file that imports nothing but Node built-ins', async () => {
    const [path] = (await buildSkills(join(work, 'built'))) as string[];
    expect(path).toBe(join(work, 'built', 'underground-bus', 'send.mjs'));
    const code = await readFile(path as string, 'utf8');
    const imports = [...code.matchAll(/^\s*import\s[^'"]*['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    expect(imports.length).toBeGreaterThan(0);
    for (const specifier of imports) expect(specifier).toMatch(/^node:/);
    expect(code).not.toMatch(/\brequire\(/);
    expect(((await stat(path as string)).mode & 0o111) !== 0).toBe(true);
  }, 60_000);

  it('SKILL.md has the front matter OpenClaw reads and is gated on the wallet variables', async () => {
    const files = await busSkillFiles();
    expect(files.map((f) => f.path.join('/'))).toEqual([
      '.agents/skills/underground-bus/SKILL.md',
      '.agents/skills/underground-bus/send.mjs',
    ]);
    const md = files[0]?.content.toString('utf8') ?? '';
    const front = /^---\n([\s\S]*?)\n---\n/.exec(md)?.[1] ?? '';
    expect(front).toMatch(/^name: underground-bus$/m);
    const description = /^description: (.+)$/m.exec(front)?.[1] ?? '';
    expect(description.length).toBeGreaterThan(20);
    expect(description.length).toBeLessThan(160);
    const metadata = JSON.parse(/^metadata: (.+)$/m.exec(front)?.[1] ?? '{}');
    expect(metadata.openclaw.requires).toEqual({ bins: ['node'], env: ['AOP_AGENT_WALLET_KEY', 'AOP_AGENT_BUS_URL'] });
    for (const action of ['BOOKING_REQUEST', 'BOOKING_COUNTER', 'BOOKING_ACCEPT', 'BOOKING_DECLINE', 'BOOKING_CANCEL', 'AMPLIFY_']) {
      expect(md).toContain(action);
    }
    expect(md).toContain('node {baseDir}/send.mjs');
  });

  it('local: the skill is in the workspace after create, and repair rewrites it', async () => {
    const host = new LocalAgentHost({
      dataDir: join(work, 'local'),
      encryptionKey: key,
      runtimes: { '1.0.0': await installFakeRuntime(join(work, 'rt'), '1.0.0') },
      nodeBin: process.execPath,
      defaultVersion: '1.0.0',
      readyPollMs: 50,
      stopTimeoutMs: 5_000,
    });
    cleanups.push(() => host.shutdown());
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId, { timeoutMs: 15_000 });
    const dir = join(host.paths(s.agentId).workspace, ...BUS_SKILL_DIR);
    const [skillMd, script] = await busSkillFiles();
    expect(await readFile(join(dir, 'SKILL.md'))).toEqual(skillMd?.content);
    expect(await readFile(join(dir, 'send.mjs'))).toEqual(script?.content);
    // OpenClaw still seeded the new workspace (a skill under skills/ would have made it look customized).
    expect(existsSync(join(host.paths(s.agentId).workspace, 'AGENTS.md'))).toBe(true);

    // Edited and deleted by the agent: repair puts the current version back.
    await writeFile(join(dir, 'SKILL.md'), 'changed');
    await unlink(join(dir, 'send.mjs'));
    await host.repair(s.agentId);
    expect(await readFile(join(dir, 'SKILL.md'))).toEqual(skillMd?.content);
    expect(await readFile(join(dir, 'send.mjs'))).toEqual(script?.content);

    // A link the agent leaves in place of a skill file is not written through: the file outside stays as it was.
    const outside = join(work, 'outside.txt');
    await writeFile(outside, 'not yours');
    await unlink(join(dir, 'send.mjs'));
    await symlink(outside, join(dir, 'send.mjs'));
    await host.restart(s.agentId);
    expect(await readFile(outside, 'utf8')).toBe('not yours');
    expect((await host.logs(s.agentId, { tail: 200 })).join('\n')).toContain('the underground-bus skill was not installed');
  }, 60_000);

  it('docker: the skill goes into the state volume with the config, owned by the gateway user, on every start', async () => {
    const dir = await mkdtemp(join(work, 'engine-'));
    const engine = await startDockerEngine({
      socketPath: join(dir, 'docker.sock'),
      dir,
      images: { 'ghcr.io/openclaw/openclaw:1.0.0': {} },
    });
    const uid = process.getuid?.() ?? 1000;
    const gid = process.getgid?.() ?? 1000;
    const host = new DockerAgentHost({
      dataDir: join(dir, 'data'),
      encryptionKey: key,
      socketPath: engine.socketPath,
      image: 'ghcr.io/openclaw/openclaw:1.0.0',
      user: `${uid}:${gid}`,
      readyPollMs: 25,
      stopTimeoutMs: 5_000,
    });
    cleanups.push(
      () => host.shutdown(),
      () => engine.close(),
    );
    const s = spec();
    await host.create(s);
    await host.waitUntilReady(s.agentId, { timeoutMs: 15_000 });
    const volume = engine.volumeDir(dockerStateVolumeName(s.agentId));
    const skillDir = join(volume, 'workspace', ...BUS_SKILL_DIR);
    const [skillMd, script] = await busSkillFiles();
    expect(await readFile(join(skillDir, 'SKILL.md'))).toEqual(skillMd?.content);
    expect(await readFile(join(skillDir, 'send.mjs'))).toEqual(script?.content);
    expect(existsSync(join(volume, 'workspace', 'AGENTS.md'))).toBe(true);
    const written = engine.container(dockerContainerName(s.agentId))?.archives.flat() ?? [];
    const skillEntries = written.filter((entry) => entry.path.includes('/workspace'));
    expect(skillEntries.map((e) => [e.path, e.type, e.uid, e.gid])).toEqual([
      ['/home/node/.openclaw/workspace', 'directory', uid, gid],
      ['/home/node/.openclaw/workspace/.agents', 'directory', uid, gid],
      ['/home/node/.openclaw/workspace/.agents/skills', 'directory', uid, gid],
      ['/home/node/.openclaw/workspace/.agents/skills/underground-bus', 'directory', uid, gid],
      ['/home/node/.openclaw/workspace/.agents/skills/underground-bus/SKILL.md', 'file', uid, gid],
      ['/home/node/.openclaw/workspace/.agents/skills/underground-bus/send.mjs', 'file', uid, gid],
    ]);

    await writeFile(join(skillDir, 'SKILL.md'), 'changed');
    await host.repair(s.agentId);
    expect(await readFile(join(skillDir, 'SKILL.md'))).toEqual(skillMd?.content);
  }, 60_000);

  it('kubernetes: the skill rides in the ConfigMap and the init container copies it into the workspace', async () => {
    const api = await startKubeApi();
    cleanups.push(() => api.close());
    const host = new KubernetesAgentHost({ kubeconfig: api.kubeConfig(), pollMs: 5, readyTimeoutMs: 2_000, stopTimeoutMs: 2_000 });
    const s = spec();
    await host.create(s);
    const name = kubeAgentName(s.agentId);
    const [skillMd, script] = await busSkillFiles();
    const configMap = api.get('configmaps', 'aop-agents', name) as { data: Record<string, string> };
    expect(configMap.data['skills.underground-bus.SKILL.md']).toBe(skillMd?.content.toString('utf8'));
    expect(configMap.data['skills.underground-bus.send.mjs']).toBe(script?.content.toString('utf8'));
    const pod = (api.get('deployments', 'aop-agents', name) as any).spec.template.spec;
    const volume = pod.volumes.find((v: any) => v.name === 'skills');
    expect(volume).toEqual({
      name: 'skills',
      configMap: {
        name,
        optional: true,
        items: [
          { key: 'skills.underground-bus.SKILL.md', path: 'underground-bus/SKILL.md' },
          { key: 'skills.underground-bus.send.mjs', path: 'underground-bus/send.mjs' },
        ],
      },
    });
    const [init] = pod.initContainers;
    expect(init.volumeMounts).toContainEqual({ name: 'skills', mountPath: '/etc/openclaw-skills', readOnly: true });
    // Only the init container sees the skills mount; the gateway's config volume still carries openclaw.json only.
    expect(pod.containers[0].volumeMounts.map((m: any) => m.name)).not.toContain('skills');

    // The init container's script, run as the kubelet would: the ConfigMap volume laid out with its `..data` links,
    // the PVC a directory here. An existing workspace keeps its files; an edited skill and a link are replaced.
    const root = await mkdtemp(join(work, 'pod-'));
    const data = join(root, 'etc-skills', '..2026_01_01_00_00_00.000000001');
    for (const item of volume.configMap.items) {
      await mkdir(join(data, item.path, '..'), { recursive: true });
      await writeFile(join(data, item.path), configMap.data[item.key] as string);
    }
    await symlink('..2026_01_01_00_00_00.000000001', join(root, 'etc-skills', '..data'));
    await symlink('..data/underground-bus', join(root, 'etc-skills', 'underground-bus'));
    const workspace = join(root, 'pvc', 'state', 'workspace');
    const skillDir = join(workspace, ...BUS_SKILL_DIR);
    await mkdir(skillDir, { recursive: true });
    await writeFile(join(workspace, 'AGENTS.md'), 'mine');
    await writeFile(join(skillDir, 'SKILL.md'), 'changed');
    await writeFile(join(root, 'outside'), 'not yours');
    await symlink(join(root, 'outside'), join(skillDir, 'send.mjs'));
    // The config and the secret file, mounted the same way, copied into the pod's runtime directory.
    for (const [dir, file, content] of [
      ['etc-config', 'openclaw.json', configMap.data['openclaw.json'] as string],
      ['etc-secrets', 'aop-secrets.json', '{"gatewayToken":"gw"}'],
    ] as const) {
      await mkdir(join(root, dir, '..2026_01_01_00_00_00.000000001'), { recursive: true });
      await writeFile(join(root, dir, '..2026_01_01_00_00_00.000000001', file), content);
      await symlink('..2026_01_01_00_00_00.000000001', join(root, dir, '..data'));
      await symlink(`..data/${file}`, join(root, dir, file));
    }
    await mkdir(join(root, 'run'));
    const command = (init.command[2] as string)
      .replaceAll('/var/lib/openclaw', join(root, 'pvc'))
      .replaceAll('/etc/openclaw-skills', join(root, 'etc-skills'))
      .replaceAll('/etc/openclaw-secrets', join(root, 'etc-secrets'))
      .replaceAll('/etc/openclaw', join(root, 'etc-config'))
      .replaceAll('/run/openclaw', join(root, 'run'));
    await new Promise<void>((resolve, reject) =>
      execFile('sh', ['-c', command], (error, _stdout, stderr) => (error ? reject(new Error(stderr)) : resolve())),
    );
    expect(await readFile(join(skillDir, 'SKILL.md'))).toEqual(skillMd?.content);
    expect(await readFile(join(skillDir, 'send.mjs'))).toEqual(script?.content);
    expect(await readFile(join(root, 'outside'), 'utf8')).toBe('not yours');
    expect(await readFile(join(workspace, 'AGENTS.md'), 'utf8')).toBe('mine');
    // Regular files (not the mounts' links), readable by the gateway's user only.
    for (const file of ['openclaw.json', 'aop-secrets.json']) {
      const info = await lstat(join(root, 'run', file));
      expect(info.isFile() && (info.mode & 0o777) === 0o600, file).toBe(true);
    }
    expect(await readFile(join(root, 'run', 'aop-secrets.json'), 'utf8')).toBe('{"gatewayToken":"gw"}');
    expect(await readFile(join(root, 'run', 'openclaw.json'), 'utf8')).toBe(configMap.data['openclaw.json']);
  }, 60_000);
});
