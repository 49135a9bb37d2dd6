import { wakesOnMessage } from '@aop/core/agent-state';
import { type ReactNode, useEffect, useRef, useState } from 'react';
import { client, errorMessage, request } from '../../api.js';
import type { Device } from '../../api-types.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { useApi } from '../../use-api.js';
import { type AgentStateNow, formatTime } from './shared.js';

type Action = 'approve' | 'deny' | 'revoke';
const DONE: Record<Action, string> = { approve: 'approved', deny: 'denied', revoke: 'revoked' };
const REFRESH_MS = 10_000;

/**
 * Devices paired with this agent's gateway (`/api/devices` with the page's `agentId`, spec §4.12 and issue #19), read
 * again 10 seconds after each answer while the agent is awake. Each agent's devices are its own, whichever agent is the
 * account's primary one.
 */
export function DevicesTab({ agentId, agentState }: { agentId: string; agentState?: AgentStateNow | undefined }) {
  const asleep = agentState !== undefined && wakesOnMessage(agentState.state);
  const devices = useApi('/api/devices', { params: { query: { agentId } } });
  const { reload, loading } = devices;
  // Read again 10 s after each answer rather than every 10 s: a gateway that answers slower than the interval (an
  // unreachable one takes the web's whole gateway timeout, 10 s by default) would otherwise have every answer
  // superseded by the next request, and the list would never show. Not while the agent sleeps: its gateway is down
  // then, so each read would answer the same record. Once it is live again (woken, or started) it is read at once.
  const before = useRef(agentState?.state);
  const live = agentState?.state === 'live';
  useEffect(() => {
    if (live && before.current !== undefined && before.current !== 'live') void reload();
    before.current = agentState?.state;
  }, [agentState?.state, live, reload]);
  useEffect(() => {
    if (loading || asleep) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = () => {
      timer = setTimeout(async () => {
        if (document.visibilityState === 'visible') await reload();
        if (!stopped) next();
      }, REFRESH_MS);
    };
    next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [reload, loading, asleep]);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();

  const act = async (device: Device, action: Action) => {
    setBusy(device.id);
    setError(undefined);
    setDone(undefined);
    try {
      await request(client.POST('/api/devices', { body: { deviceId: device.id, action, agentId } }));
      setDone(`${label(device)} ${DONE[action]}.`);
    } catch (err) {
      setError(`Could not ${action} ${label(device)}: ${errorMessage(err)}`);
    } finally {
      setBusy(null);
      await reload();
    }
  };

  return (
    <div className="stack">
      <p className="notice">
        Devices (browsers and apps) that asked to pair with this agent’s gateway. Approve only devices you recognise.
      </p>
      {asleep ? (
        <p className="notice" role="status">
          The agent is asleep after being idle: these are its devices as last seen (its gateway is not asked while it sleeps). A device
          connecting to it wakes it; approving, denying or revoking one here wakes it first, which can take up to a minute.
        </p>
      ) : null}
      <InlineError message={error} />
      {done ? (
        <p className="notice" role="status">
          {done}
        </p>
      ) : null}
      <Loaded resource={devices}>
        {(d) => (
          <>
            <section aria-labelledby="pending-heading">
              <h2 id="pending-heading">Waiting for approval ({d.pending.length})</h2>
              {d.pending.length === 0 ? (
                <p className="state state-empty">No device is waiting for approval.</p>
              ) : (
                <DeviceTable
                  devices={d.pending}
                  caption="Devices waiting for approval"
                  actions={(device) => (
                    <div className="row">
                      <button type="button" className="button primary" disabled={busy !== null} onClick={() => void act(device, 'approve')}>
                        Approve<span className="visually-hidden"> {label(device)}</span>
                      </button>
                      <button type="button" className="button secondary" disabled={busy !== null} onClick={() => void act(device, 'deny')}>
                        Deny<span className="visually-hidden"> {label(device)}</span>
                      </button>
                    </div>
                  )}
                />
              )}
            </section>
            <section aria-labelledby="approved-heading">
              <h2 id="approved-heading">Approved ({d.approved.length})</h2>
              {d.approved.length === 0 ? (
                <p className="state state-empty">No approved devices.</p>
              ) : (
                <DeviceTable
                  devices={d.approved}
                  caption="Approved devices"
                  actions={(device) => (
                    <ConfirmButton
                      danger
                      disabled={busy !== null}
                      question={`Revoke ${label(device)}? It will have to pair again.`}
                      onConfirm={() => act(device, 'revoke')}
                    >
                      Revoke<span className="visually-hidden"> {label(device)}</span>
                    </ConfirmButton>
                  )}
                />
              )}
            </section>
          </>
        )}
      </Loaded>
    </div>
  );
}

const label = (device: Device) => `device ${device.name || device.id}`;

function DeviceTable({ devices, caption, actions }: { devices: Device[]; caption: string; actions: (device: Device) => ReactNode }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Device</th>
            <th scope="col">Address</th>
            <th scope="col">First seen</th>
            <th scope="col">Last seen</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {devices.map((device) => (
            <tr key={device.id}>
              <td>
                {device.name || <span className="muted">unnamed</span>}
                <div className="mono muted device-id">{device.id}</div>
              </td>
              <td className="mono">{device.ip || '—'}</td>
              <td>{formatTime(device.firstSeen)}</td>
              <td>{formatTime(device.lastSeen)}</td>
              <td>{actions(device)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
