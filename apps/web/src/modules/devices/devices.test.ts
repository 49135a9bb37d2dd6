import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// Spec §4.12 `POST /api/devices` body checks, all made before any gateway is consulted (the pairing itself is covered
// by test/integration/devices.test.ts against real gateways).
describe('POST /api/devices: the body, field by field', () => {
  let web: TestWeb;
  let cookie: string;
  beforeAll(async () => {
    web = await startWeb();
    ({ cookie } = await web.signIn());
  });
  afterAll(async () => web?.close());

  const post = (json: unknown, headers: Record<string, string> = { cookie }) => request(`${web.url}/api/devices`, { json, headers });

  it('401 without a session before any field is looked at; a body that is not a JSON object is refused first, as before', async () => {
    for (const body of [{}, { deviceId: 42, action: 'delete' }]) {
      expect(await post(body, {})).toMatchObject({ status: 401, body: { error: 'Unauthorized' } });
    }
    expect(await post(['approve'], {})).toMatchObject({ status: 400, body: { error: 'Invalid request body' } });
  });

  it.each([
    [{}, 'Missing required fields: deviceId, action'],
    [{ deviceId: 'abc', action: '' }, 'Missing required fields: deviceId, action'],
    // Presence of both fields comes before the type of either.
    [{ deviceId: 42, action: null }, 'Missing required fields: deviceId, action'],
    [{ deviceId: null, action: 'delete' }, 'Missing required fields: deviceId, action'],
    [{ deviceId: ['abc'], action: 'delete' }, 'Invalid request body'],
    [{ deviceId: true, action: 'approve' }, 'Invalid request body'],
    [{ deviceId: 'abc', action: 'Approve' }, 'Invalid action. Must be: approve, deny, or revoke'],
    [{ deviceId: 'x'.repeat(5000), action: 5 }, 'Invalid action. Must be: approve, deny, or revoke'],
  ])('%j → 400 %s', async (body, error) => {
    expect(await post(body)).toMatchObject({ status: 400, body: { error } });
  });

  it('a valid body reaches the device lookup: 404 for a user without an agent, or for an id too long to be on record', async () => {
    for (const deviceId of ['abc', 'x'.repeat(257)]) {
      expect(await post({ deviceId, action: 'approve' })).toMatchObject({ status: 404, body: { error: 'Device not found' } });
    }
  });
});
