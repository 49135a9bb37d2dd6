/** The gateway CLI's approval of one pairing request, run inside the agent's container (docker) or pod (kubernetes). */
export const approveCommand = (cliCommand: string[] | undefined, requestId: string) => [
  ...(cliCommand ?? ['openclaw']),
  'devices',
  'approve',
  requestId,
  '--json',
];

/**
 * An exit code of 0 is not enough: the CLI may approve a different pending request than the one our device left,
 * so its JSON answer must name our device.
 */
export function assertApproved(stdout: string, deviceId: string, shown: string): void {
  let answer: { requestId?: unknown; device?: { deviceId?: unknown } } | null = null;
  try {
    answer = JSON.parse(stdout);
  } catch {
    answer = null;
  }
  if (answer?.device?.deviceId !== deviceId) throw new Error(`${shown} did not report the platform device as approved`);
}
