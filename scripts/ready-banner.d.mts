export interface AnnounceOptions {
  /** Service name → health URL; each must answer 2xx. */
  checks: Record<string, string>;
  /** The banner's label and value pairs, read once everything answers. */
  rows: () => Promise<Array<[string, string]>>;
  stopped?: () => boolean;
  timeoutMs?: number;
  write?: (text: string) => void;
}

/** True once the banner is written; false when a service never answered in time or the wait was stopped. */
export function announceWhenReady(options: AnnounceOptions): Promise<boolean>;
