-- Agents the web deployed directly through the hosting provider (spec §4.15, no backend answered): the
-- provider's service and deployment ids, polled until the deployment settles, and the gateway token the web
-- generated, sealed with the web's ENCRYPTION_KEY (AES-256-GCM, associated data `agents:<id>:gateway_token`),
-- handed to the owner by GET /api/user/runtime. All null for agents the backend runs.
alter table agents add column gateway_token_sealed text;
alter table agents add column hosting_service_id text;
alter table agents add column hosting_deployment_id text;
