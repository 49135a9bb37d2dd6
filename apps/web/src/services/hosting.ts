import { randomBytes } from 'node:crypto';

export interface HostingOptions {
  apiUrl: string;
  apiKey: string;
  projectId: string;
  environmentId: string;
  image: string;
}

export interface DirectDeployment {
  serviceId: string;
  deploymentId: string | null;
  /** `https://<domain>`: the gateway's public address (port 18789 behind the provider's proxy). */
  url: string;
  /** The gateway's control UI with the gateway token and URL in the hash fragment (never sent to a server). */
  controlUiUrl: string;
}

export class HostingError extends Error {
  override name = 'HostingError';
}

/** One GraphQL call; `errors` in the answer or a non-2xx status is a HostingError. */
async function graphql<T>(options: HostingOptions, query: string, variables: Record<string, unknown>): Promise<T> {
  let res: Response;
  try {
    res = await fetch(options.apiUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${options.apiKey}` },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new HostingError(`hosting API unreachable: ${err instanceof Error ? err.message : String(err)}`);
  }
  const body = (await res.json().catch(() => null)) as { data?: T; errors?: { message: string }[] } | null;
  if (!res.ok || !body || body.errors?.length || !body.data) {
    throw new HostingError(`hosting API refused: ${body?.errors?.map((e) => e.message).join('; ') || `HTTP ${res.status}`}`);
  }
  return body.data;
}

/**
 * Spec §4.15 direct deployment: create the service from the agent image, set its
 * environment (the gateway token and channel tokens only: never a platform
 * secret), its start command, a public domain targeting port 18789, then deploy.
 */
export async function deployDirect(
  options: HostingOptions,
  agent: { agentId: string; name: string; channelTokens: Record<string, string> },
): Promise<DirectDeployment> {
  const gatewayToken = randomBytes(24).toString('hex');
  const { serviceCreate } = await graphql<{ serviceCreate: { id: string } }>(
    options,
    'mutation($input: ServiceCreateInput!) { serviceCreate(input: $input) { id name } }',
    {
      input: {
        projectId: options.projectId,
        environmentId: options.environmentId,
        name: `agent-${agent.agentId}`,
        source: { image: options.image },
      },
    },
  );
  const serviceId = serviceCreate.id;
  const scope = { projectId: options.projectId, environmentId: options.environmentId, serviceId };
  const env: Record<string, string> = { OPENCLAW_GATEWAY_TOKEN: gatewayToken, OPENCLAW_GATEWAY_PORT: '18789' };
  if (agent.channelTokens.telegram) env.TELEGRAM_BOT_TOKEN = agent.channelTokens.telegram;
  if (agent.channelTokens.discord) env.DISCORD_BOT_TOKEN = agent.channelTokens.discord;
  await graphql(options, 'mutation($input: VariableCollectionUpsertInput!) { variableCollectionUpsert(input: $input) }', {
    input: { ...scope, variables: env },
  });
  await graphql(
    options,
    'mutation($serviceId: String!, $environmentId: String!, $input: ServiceInstanceUpdateInput!) { serviceInstanceUpdate(serviceId: $serviceId, environmentId: $environmentId, input: $input) }',
    {
      serviceId,
      environmentId: options.environmentId,
      input: { startCommand: 'openclaw gateway run --bind lan --port 18789' },
    },
  );
  const { serviceDomainCreate } = await graphql<{ serviceDomainCreate: { domain: string } }>(
    options,
    'mutation($input: ServiceDomainCreateInput!) { serviceDomainCreate(input: $input) { domain } }',
    { input: { environmentId: options.environmentId, serviceId, targetPort: 18789 } },
  );
  const deployed = await graphql<{ serviceInstanceDeployV2: string | null }>(
    options,
    'mutation($serviceId: String!, $environmentId: String!) { serviceInstanceDeployV2(serviceId: $serviceId, environmentId: $environmentId) }',
    { serviceId, environmentId: options.environmentId },
  );
  const url = `https://${serviceDomainCreate.domain}`;
  const fragment = new URLSearchParams({ gatewayUrl: url.replace(/^https/, 'wss'), token: gatewayToken });
  return { serviceId, deploymentId: deployed.serviceInstanceDeployV2, url, controlUiUrl: `${url}/#${fragment.toString()}` };
}
