import type { Device, DeviceLists } from '@aop/web/devices/devices.schemas';
import { type ReactNode, useState } from 'react';
import { api, errorMessage } from '../../api.js';
import { ConfirmButton } from '../../components/confirm-button.js';
import { InlineError, Loaded } from '../../components/states.js';
import { useApi } from '../../use-api.js';
import { formatTime } from './shared.js';

type Action = 'approve' | 'deny' | 'revoke';
const DONE: Record<Action, string> = { approve: 'approved', deny: 'denied', revoke: 'revoked' };

/**
 * Devices paired with the agent gateway (`/api/devices`, spec §4.12), read again every 10 seconds. `/api/devices` serves
 * the account's primary agent's gateway (it takes no agent id), so on another agent's page the list would be that
 * other agent's: the tab says so and offers to make this agent primary instead of showing someone else's devices.
 */
export function DevicesTab(props: { agentId: string; primary: boolean; onMadePrimary: () => void }) {
  if (!props.primary) return <NotPrimary {...props} />;
  return <PrimaryDevices />;
}

function NotPrimary({ agentId, onMadePrimary }: { agentId: string; onMadePrimary: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  return (
    <div className="stack">
      <p className="notice" id="devices-not-primary">
        Device pairing is managed on your account’s primary agent, and this is not it. Make this agent primary to see and approve the
        devices that asked to pair with its gateway.
      </p>
      <div>
        <button
          type="button"
          className="button secondary"
          disabled={busy}
          aria-describedby="devices-not-primary"
          onClick={async () => {
            setBusy(true);
            setError(undefined);
            try {
              await api(`/api/agents/${encodeURIComponent(agentId)}/primary`, { method: 'PUT' });
              onMadePrimary();
            } catch (err) {
              setError(errorMessage(err));
            } finally {
              setBusy(false);
            }
          }}
        >
          Make this agent primary
        </button>
      </div>
      <InlineError message={error} />
    </div>
  );
}

function PrimaryDevices() {
  const devices = useApi<DeviceLists>('/api/devices', { refreshMs: 10_000 });
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string>();
  const [done, setDone] = useState<string>();

  const act = async (device: Device, action: Action) => {
    setBusy(device.id);
    setError(undefined);
    setDone(undefined);
    try {
      await api('/api/devices', { body: { deviceId: device.id, action } });
      setDone(`${label(device)} ${DONE[action]}.`);
    } catch (err) {
      setError(`Could not ${action} ${label(device)}: ${errorMessage(err)}`);
    } finally {
      setBusy(null);
      await devices.reload();
    }
  };

  return (
    <div className="stack">
      <p className="notice">Devices (browsers and apps) that asked to pair with your agent gateway. Approve only devices you recognise.</p>
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
