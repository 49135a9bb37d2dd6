import { type FormEvent, useState } from 'react';
import { client, request } from '../../api.js';
import type { BridgeMessage } from '../../api-types.js';
import { Announce } from '../../components/announce.js';
import { InlineError } from '../../components/states.js';
import { useAction } from '../../use-api.js';
import { bridgeHeaders } from './use-bridge.js';

/** The priorities the route accepts (apps/web/src/modules/bridge: PRIORITIES); health does not list them. */
const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
/** The route's limit (CONTENT_MAX). */
const CONTENT_MAX = 100_000;

/** `POST /api/bridge/send`: senders and channels are the ones the bridge's health answer names. */
export function SendMessage({
  senders,
  channels,
  secret,
  onSent,
}: {
  senders: string[];
  channels: string[];
  secret: string | undefined;
  onSent: () => void;
}) {
  // The operator's own identity is the last sender the route lists (apps/web/src/modules/bridge: senders).
  const [sender, setSender] = useState(senders[senders.length - 1] ?? '');
  const [channel, setChannel] = useState(channels[0] ?? 'general');
  const [priority, setPriority] = useState<string>('normal');
  const [content, setContent] = useState('');
  const [sent, setSent] = useState<string>();

  const send = useAction(async () =>
    request(
      client.POST('/api/bridge/send', {
        // The channels are the ones the bridge's health answer names; the priorities are this form's own choices.
        body: { sender, channel: channel as BridgeMessage['channel'], priority: priority as BridgeMessage['priority'], content },
        headers: bridgeHeaders(secret),
      }),
    ),
  );

  const onSubmit = async (event: FormEvent) => {
    event.preventDefault();
    setSent(undefined);
    if (!content.trim()) return send.setError('Write a message first.');
    const answer = await send.run();
    if (!answer) return;
    setContent('');
    setSent(`Message sent to ${answer.message.channel}.`);
    onSent();
  };

  return (
    <section aria-labelledby="send-heading" className="card stack">
      <h2 id="send-heading">Send a message</h2>
      <form onSubmit={onSubmit} className="stack" noValidate>
        <div className="grid bridge-send-fields">
          <div>
            <label htmlFor="send-sender">Sender</label>
            <select id="send-sender" value={sender} onChange={(e) => setSender(e.target.value)}>
              {senders.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="send-channel">Send to channel</label>
            <select id="send-channel" value={channel} onChange={(e) => setChannel(e.target.value)}>
              {channels.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label htmlFor="send-priority">Priority</label>
            <select id="send-priority" value={priority} onChange={(e) => setPriority(e.target.value)}>
              {PRIORITIES.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </div>
        </div>
        <div>
          <label htmlFor="send-content">Message</label>
          <textarea id="send-content" maxLength={CONTENT_MAX} value={content} onChange={(e) => setContent(e.target.value)} />
        </div>
        <InlineError message={send.error} />
        <div className="row">
          <button type="submit" className="button primary" disabled={send.pending}>
            Send message
          </button>
        </div>
      </form>
      <Announce message={sent} />
    </section>
  );
}
