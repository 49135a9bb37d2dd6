import { request } from '@aop/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultAgentConfig } from './agent-config.service.js';
import { startWeb, type TestWeb } from '../../web.test-support.js';

// `GET /api/config/backups/:backupId` (ours, beside spec §4.2): one backup's contents, for the dashboard's diff.
describe('configuration backup contents', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startWeb();
  });
  afterAll(() => web.close());

  const getBackup = (id: string, cookie?: string) =>
    request(`${web.url}/api/config/backups/${encodeURIComponent(id)}`, { headers: cookie ? { cookie } : {} });
  const post = (cookie: string, json: unknown) => request(`${web.url}/api/config`, { json, headers: { cookie } });

  it('401 Unauthorized without a session', async () => {
    const res = await getBackup('bkp_x');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'Unauthorized' });
  });

  it('answers the configuration the backup holds, with its id and time', async () => {
    const { cookie } = await web.signIn();
    const first = await post(cookie, { config: { logging: { level: 'one' } } });
    const second = await post(cookie, { config: { logging: { level: 'two' } } });
    // The first save backed up the defaults, the second the first save.
    const a = await getBackup(first.body.backupId, cookie);
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ backup: { id: first.body.backupId, timestamp: expect.any(String), config: defaultAgentConfig('free') } });
    expect(new Date(a.body.backup.timestamp).toISOString()).toBe(a.body.backup.timestamp);
    const b = await getBackup(second.body.backupId, cookie);
    expect(b.body.backup.config).toEqual({ logging: { level: 'one' } });
    expect(second.body.backups.find((x: { id: string }) => x.id === second.body.backupId).timestamp).toBe(b.body.backup.timestamp);
  });

  it('404 Backup not found for an unknown id and for another user’s backup', async () => {
    const a = await web.signIn();
    const b = await web.signIn();
    const saved = await post(a.cookie, { config: { logging: { level: 'secret-of-a' } } });
    for (const res of [await getBackup('bkp_does_not_exist', a.cookie), await getBackup(saved.body.backupId, b.cookie)]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Backup not found' });
    }
  });
});
