/**
 * Readable names for OpenClaw session keys. A gateway names each conversation by where it came from
 * (runtime/node_modules/openclaw/docs/channels/channel-routing.md, concepts/session.md, gateway/openai-http-api.md):
 *
 *   agent:<agentId>:main                                  the agent's main session (DMs share it by default)
 *   agent:<agentId>:direct:<peer>                          session.dmScope "per-peer"
 *   agent:<agentId>:<channel>:direct:<peer>                "per-channel-peer" (also `slash:<user>` for slash commands)
 *   agent:<agentId>:<channel>:<account>:direct:<peer>      "per-account-channel-peer"
 *   agent:<agentId>:<channel>:group:<id>[:topic:<topic>]   a group (a Telegram forum topic inside it)
 *   agent:<agentId>:<channel>:channel:<id>[:thread:<ts>]   a room or channel (Slack and Discord threads append one)
 *   agent:<agentId>:subagent:<name> · cron:<job>[:run:<id>] · hook:<name> · acp:<name> · boot:<run> · explicit:<name>
 *   agent:<agentId>:openai-user:<user>                     the OpenAI-compatible endpoint, one session per `user`
 *   agent:<agentId>:openai:<uuid>                          the same endpoint without a `user`: one request
 *   agent:<agentId>:<name>                                 a session created with a name (`scratch-1`, `big-refactor`)
 *
 * This platform's own chats carry the owner tag `aop-owner:<userId>` before the dashboard's session name
 * (`agent:main:aop-owner:<user>:main` over the WebSocket, `agent:main:openai-user:aop-owner:<user>:main` over REST):
 * those are the account's own dashboard chats, named by their session.
 */

const CHANNELS: Record<string, string> = {
  telegram: 'Telegram',
  whatsapp: 'WhatsApp',
  discord: 'Discord',
  slack: 'Slack',
  signal: 'Signal',
  imessage: 'iMessage',
  msteams: 'Microsoft Teams',
  twitch: 'Twitch',
  matrix: 'Matrix',
  feishu: 'Feishu',
  wechat: 'WeChat',
  googlechat: 'Google Chat',
  mattermost: 'Mattermost',
  line: 'LINE',
  irc: 'IRC',
  voice: 'Voice',
  email: 'Email',
  webchat: 'Web chat',
};

/** How a peer kind reads after the channel's name. */
const PEER_KINDS: Record<string, string> = {
  direct: 'direct message',
  dm: 'direct message',
  group: 'group',
  channel: 'channel',
  slash: 'slash command',
};

const OWNER_TAG = 'aop-owner';

const channelName = (id: string) => CHANNELS[id.toLowerCase()] ?? id;

/** `:thread:<id>` and `:topic:<id>` pairs at the end (or a topic inside a group key), read off as words. */
function takeSubThreads(parts: string[]): { rest: string[]; extra: string[] } {
  const rest: string[] = [];
  const extra: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if ((part === 'thread' || part === 'topic') && i > 0 && i + 1 < parts.length) {
      extra.push(`${part} ${parts[i + 1]}`);
      i++;
    } else rest.push(part);
  }
  return { rest, extra };
}

/** The session part (after `agent:<id>:`) as words; `parts` has no thread or topic suffixes left. */
function describe(parts: string[]): string {
  const [head = '', ...tail] = parts;
  const after = tail.join(':');
  switch (head) {
    case '':
      return 'Session';
    case 'main':
      return tail.length === 0 ? 'Main session' : `Main session · ${after}`;
    case 'global':
      return 'Global session';
    case OWNER_TAG:
      // Our WebSocket chat: the owner tag, the user's id, then the dashboard's session name.
      return `Dashboard chat · ${tail.slice(1).join(':') || 'main'}`;
    case 'openai-user':
      if (tail[0] === OWNER_TAG) return `Dashboard chat · ${tail.slice(2).join(':') || 'main'}`;
      return `API chat · user ${after || 'unknown'}`;
    case 'openai':
      return 'API request';
    case 'subagent':
      return `Subagent ${after}`.trim();
    case 'cron': {
      const run = tail.indexOf('run');
      return run > 0
        ? `Scheduled job ${tail.slice(0, run).join(':')} · run ${tail.slice(run + 1).join(':')}`
        : `Scheduled job ${after}`.trim();
    }
    case 'hook':
      return `Webhook ${after}`.trim();
    case 'acp':
      return `ACP session ${after}`.trim();
    case 'boot':
      return `Start-up run ${after}`.trim();
    case 'explicit':
      return `Session ${after}`.trim();
    case 'dashboard':
      return `Control UI · ${after || 'session'}`;
  }
  if (head in PEER_KINDS && tail.length > 0) return `${PEER_KINDS[head]![0]!.toUpperCase()}${PEER_KINDS[head]!.slice(1)} · ${after}`;
  // <channel>[:<account>]:<kind>:<peer>
  const kindAt = parts.findIndex((part, i) => i > 0 && part in PEER_KINDS && i + 1 < parts.length);
  if (kindAt > 0) {
    const account = parts.slice(1, kindAt).join(':');
    const peer = parts.slice(kindAt + 1).join(':');
    return `${channelName(head)} ${PEER_KINDS[parts[kindAt]!]} · ${peer}${account ? ` (account ${account})` : ''}`;
  }
  if (tail.length > 0) return `${channelName(head)} · ${after}`;
  return head;
}

/**
 * A session key as words: where the conversation comes from and who or what it is with; an agent other than OpenClaw's
 * default is named after it, unless `nameAgent: false` (the caller names the agent already).
 */
export function sessionKeyLabel(key: string, options: { nameAgent?: boolean } = {}): string {
  const trimmed = key.trim();
  const parts = trimmed.split(':');
  let agentId: string | undefined;
  let session = parts;
  if (parts[0]?.toLowerCase() === 'agent' && parts.length >= 3) {
    agentId = parts[1];
    session = parts.slice(2);
  }
  const { rest, extra } = takeSubThreads(session);
  const words = [describe(rest), ...extra].join(' · ');
  // OpenClaw's default agent is `main`; any other agent of a multi-agent gateway is named.
  return agentId && agentId !== 'main' && options.nameAgent !== false ? `${words} (agent ${agentId})` : words;
}

/**
 * A mission-control trace's description, `<agent name>: <title>`, where the title is the session's label or, when it
 * has none, its raw key: the key is read as words and kept for the title and for copying.
 */
export function traceSession(description: string): { agent: string | null; label: string; key: string | null } {
  const match = /^(.*): (agent:\S+)$/s.exec(description);
  // The description names the platform agent: the gateway's id for it (an agent sharing its gateway) adds nothing.
  if (match) return { agent: match[1]!, label: sessionKeyLabel(match[2]!, { nameAgent: false }), key: match[2]! };
  return { agent: null, label: description, key: null };
}
