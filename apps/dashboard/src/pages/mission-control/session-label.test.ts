import { describe, expect, it } from 'vitest';
import { sessionKeyLabel, traceSession } from './session-label.js';

// The keys are the shapes OpenClaw documents (runtime/node_modules/openclaw/docs: channels/channel-routing.md,
// concepts/session.md, channels/slack/threads-and-sessions.md, gateway/openai-http-api.md) and this platform's own.
describe('session key labels', () => {
  it.each([
    ['agent:main:main', 'Main session'],
    ['agent:work:main', 'Main session (agent work)'],
    ['agent:main:global', 'Global session'],
    ['agent:main:direct:alice', 'Direct message · alice'],
    ['agent:main:telegram:direct:123', 'Telegram direct message · 123'],
    ['agent:main:slack:work-account:direct:U12345678', 'Slack direct message · U12345678 (account work-account)'],
    ['agent:main:whatsapp:group:120363403215116621@g.us', 'WhatsApp group · 120363403215116621@g.us'],
    ['agent:main:telegram:group:-1001234567890:topic:42', 'Telegram group · -1001234567890 · topic 42'],
    ['agent:main:discord:channel:123456:thread:987654', 'Discord channel · 123456 · thread 987654'],
    ['agent:main:slack:direct:U12345678:thread:1777244748.777299', 'Slack direct message · U12345678 · thread 1777244748.777299'],
    ['agent:main:main:thread:1777244748.777299', 'Main session · thread 1777244748.777299'],
    ['agent:main:discord:slash:4242', 'Discord slash command · 4242'],
    ['agent:main:telegram:12345', 'Telegram · 12345'],
    ['agent:main:subagent:search-helper', 'Subagent search-helper'],
    ['agent:main:cron:nightly:run:8821', 'Scheduled job nightly · run 8821'],
    ['agent:main:cron:nightly', 'Scheduled job nightly'],
    ['agent:main:hook:automation', 'Webhook automation'],
    ['agent:main:acp:codex', 'ACP session codex'],
    ['agent:main:boot:run-7', 'Start-up run run-7'],
    ['agent:main:explicit:portal-123', 'Session portal-123'],
    ['agent:main:dashboard:review-ui', 'Control UI · review-ui'],
    ['agent:main:openai-user:bob', 'API chat · user bob'],
    ['agent:main:openai:6f1c2d3e-0000-4000-8000-000000000000', 'API request'],
    ['agent:main:scratch-1', 'scratch-1'],
    ['agent:ops:incident-42', 'incident-42 (agent ops)'],
    // The dashboard's own chats: REST and WebSocket, with the owner tag OpenClaw stores lower-cased.
    ['agent:main:openai-user:aop-owner:usr_01hzy3k9:main', 'Dashboard chat · main'],
    ['agent:main:openai-user:aop-owner:usr_01hzy3k9:trip-planning', 'Dashboard chat · trip-planning'],
    ['agent:main:aop-owner:usr_01hzy3k9:main', 'Dashboard chat · main'],
  ])('%s → %s', (key, label) => {
    expect(sessionKeyLabel(key)).toBe(label);
  });

  it('never shows the owner tag or the account id of a dashboard chat', () => {
    const label = sessionKeyLabel('agent:main:openai-user:aop-owner:usr_01hzy3k9abcdef:main');
    expect(label).not.toContain('usr_');
    expect(label).not.toContain('aop-owner');
  });

  it('reads a trace description as the agent, the readable label and the raw key', () => {
    expect(traceSession('Hamilton: agent:main:openai-user:aop-owner:usr_1:main')).toEqual({
      agent: 'Hamilton',
      label: 'Dashboard chat · main',
      key: 'agent:main:openai-user:aop-owner:usr_1:main',
    });
    // An agent sharing its gateway: its session key names it by the gateway's id, which the trace's agent name says already.
    expect(traceSession('Scheduler: agent:agt_x1:openai-user:aop-owner:usr_1:main')).toMatchObject({
      agent: 'Scheduler',
      label: 'Dashboard chat · main',
    });
    // An agent whose name has a colon in it keeps it.
    expect(traceSession('Ops: night: agent:main:main')).toMatchObject({ agent: 'Ops: night', key: 'agent:main:main' });
    // A session with a label of its own is shown as it is, with no key to reveal.
    expect(traceSession('Hamilton: Weekly report')).toEqual({ agent: null, label: 'Hamilton: Weekly report', key: null });
  });
});
