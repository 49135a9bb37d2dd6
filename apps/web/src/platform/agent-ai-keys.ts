/**
 * The AI providers whose platform key an agent is given when its owner brings none: what "Platform default" in the
 * new-agent wizard may stand for. None: the backend hands an agent only the key its owner gave (`llmFor`), never one
 * of the platform's, because an agent with tools can read its own environment and a platform key given to it would be
 * its owner's to take. An agent with no key fails every model call, so the wizard asks for the owner's key and
 * `POST /api/provision` refuses an explicit `aiProvider: "platform"` (issue #19). Kept in one place for the dashboard's
 * answer (`GET /api/dashboard/new-agent`) and provisioning alike; the day the backend gives agents a platform key (or a
 * proxy to one), the providers it covers go here.
 */
export const AGENT_PLATFORM_KEY_PROVIDERS: readonly string[] = [];

/** The `aiProvider` that asks for the platform's key rather than the owner's own. */
export const PLATFORM_DEFAULT_PROVIDER = 'platform';
