import { describe, expect, it } from 'vitest';
import { agentScope, agentSessionKey, gatewayModel, ofTargetAgent, ownedSessionKey, scopedSessionKey } from './user-gateway.js';

// Issue #20, "every call names its agent": how the web addresses one agent inside a gateway that may hold several
// (the agent's gateway names it; the shared platform gateway names none), and what it reads back as that agent's.

const second = { ownerTag: null, openclawAgentId: 'second' };
const own = { ownerTag: null, openclawAgentId: 'main' };
const shared = { ownerTag: 'aop-owner:usr_1', openclawAgentId: null };

describe('agent-scoped gateway calls (platform/clients/user-gateway.ts)', () => {
  it('puts session keys in OpenClaw’s full form for the agent, keeping one already in it', () => {
    expect(scopedSessionKey(second, 'main')).toBe('agent:second:main');
    expect(scopedSessionKey(own, 'work')).toBe('agent:main:work');
    expect(agentSessionKey(second, 'agent:second:research')).toBe('agent:second:research');
    // Gateways fold keys to lower case: the agent's own full form is recognised whatever its case.
    expect(agentSessionKey(second, 'Agent:Second:research')).toBe('Agent:Second:research');
    // Another agent's full form is not a way into its sessions: it becomes a key of this agent.
    expect(agentSessionKey(second, 'agent:main:main')).toBe('agent:second:agent:main:main');
    // The shared gateway: the owner tag, and no agent named (its default agent answers).
    expect(scopedSessionKey(shared, 'main')).toBe('aop-owner:usr_1:main');
  });

  it('names the agent as the REST model and as the sessions.list filter; the shared gateway names none', () => {
    expect(gatewayModel(second)).toBe('openclaw/second');
    expect(gatewayModel(shared)).toBe('openclaw/default');
    expect(agentScope(second)).toEqual({ agentId: 'second' });
    expect(agentScope(shared)).toEqual({});
  });

  it('reads back only the agent’s sessions: a key of no agent is main’s', () => {
    expect(ofTargetAgent(second, 'agent:second:main')).toBe(true);
    expect(ofTargetAgent(second, 'AGENT:SECOND:main')).toBe(true);
    expect(ofTargetAgent(second, 'agent:main:main')).toBe(false);
    expect(ofTargetAgent(second, 'main')).toBe(false);
    expect(ofTargetAgent(own, 'main')).toBe(true);
    expect(ownedSessionKey(second, 'agent:main:openai-user:x')).toBeNull();
    expect(ownedSessionKey(second, 'agent:second:openai-user:x')).toBe('agent:second:openai-user:x');
    // On the shared gateway: the caller's tagged sessions, shown without the tag.
    expect(ownedSessionKey(shared, 'agent:main:aop-owner:usr_1:main')).toBe('agent:main:main');
    expect(ownedSessionKey(shared, 'agent:main:aop-owner:usr_2:main')).toBeNull();
  });
});
