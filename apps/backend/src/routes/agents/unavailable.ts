import { type App, DomainError } from '@aop/core';
import type { BackendConfig } from '../../config.js';
import { agentAuth } from './index.js';

/**
 * Spec §4.10: when provisioning is not available, provisioning-dependent endpoints
 * answer 500 (after the usual authentication), and everything else keeps working.
 */
export async function unavailableProvisioning(app: App, { config, paths }: { config: BackendConfig; paths: string[] }): Promise<void> {
  for (const url of paths) {
    app.route({
      method: ['GET', 'POST', 'PUT', 'DELETE'],
      url,
      onRequest: agentAuth(config),
      handler: async () => {
        throw new DomainError('PROVISIONER_NOT_CONFIGURED', { provisioner: config.provisioner });
      },
    });
  }
}
