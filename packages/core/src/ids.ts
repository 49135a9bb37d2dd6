import { randomBytes } from 'node:crypto';

/**
 * Every id the platform mints carries a prefix naming what it is, so a log line,
 * a support ticket or a webhook payload is readable on its own.
 */
export const ID_PREFIXES = {
  user: 'usr',
  authSession: 'sid',
  audit: 'aud',
  request: 'req',
  apiKey: 'key',
  backup: 'bkp',
  paymentSession: 'ses',
  agent: 'agt',
  workflow: 'wf',
  workflowNode: 'wfn',
  workflowRun: 'wfr',
  device: 'dev',
  message: 'msg',
  memory: 'mem',
  file: 'file',
  skill: 'skl',
  task: 'task',
  usage: 'use',
  bridgeMessage: 'brg',
  oauthAccount: 'oac',
  split: 'spl',
  instantSplit: 'isp',
  invite: 'inv',
  installation: 'inst',
  swarm: 'swm',
  videoJob: 'vid',
  /** An answer of the OpenAI-compatible `POST /v1/chat/completions` (OpenAI's own ids start `chatcmpl`). */
  chatCompletion: 'chatcmpl',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** `usr_3kT9…`: a prefix and 128 random bits in base64url. */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomBytes(16).toString('base64url')}`;
}
