import { describe, expect, it } from 'vitest';
import { ALL_FIELDS, configProblems, getPath, parseConfigText, setPath } from './config-fields.js';

describe('configuration fields', () => {
  it('cover every key of the spec §2.2 table once', () => {
    const paths = ALL_FIELDS.map((f) => f.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toHaveLength(31);
    expect(new Set(ALL_FIELDS.map((f) => f.label)).size).toBe(paths.length);
  });

  it('setPath copies along the path, creates parents and removes keys; getPath reads them', () => {
    const before = { tools: { profile: 'coding', exec: { timeoutSec: 10 } }, other: [1] };
    const after = setPath(before, 'tools.exec.timeoutSec', 20);
    expect(after).toEqual({ tools: { profile: 'coding', exec: { timeoutSec: 20 } }, other: [1] });
    expect(before.tools.exec.timeoutSec).toBe(10);
    expect(after.other).toBe(before.other);
    expect(setPath({}, 'a.b.c', true)).toEqual({ a: { b: { c: true } } });
    expect(setPath({ a: 5 }, 'a.b', 'x')).toEqual({ a: { b: 'x' } });
    expect(setPath(before, 'tools.profile', undefined)).toEqual({ tools: { exec: { timeoutSec: 10 } }, other: [1] });
    expect(getPath(after, 'tools.exec.timeoutSec')).toBe(20);
    expect(getPath(after, 'tools.nothing.here')).toBeUndefined();
  });

  it('reports the problems the API would refuse', () => {
    const problems = configProblems({
      agents: { defaults: { heartbeat: { every: '30 minutes' }, model: { primary: '' } } },
      tools: { profile: 'everything', exec: { timeoutSec: 0, backgroundMs: 1.5 } },
      session: { reset: { atHour: 24 } },
      cron: { enabled: 'yes' },
    });
    expect([...problems.keys()].sort()).toEqual([
      'agents.defaults.heartbeat.every',
      'agents.defaults.model.primary',
      'cron.enabled',
      'session.reset.atHour',
      'tools.exec.backgroundMs',
      'tools.exec.timeoutSec',
      'tools.profile',
    ]);
    expect(configProblems({ agents: { defaults: { heartbeat: { every: '45m' } } }, session: { reset: { atHour: 23 } } }).size).toBe(0);
  });

  it('parses the JSON view', () => {
    expect(parseConfigText('{"a":1}')).toEqual({ config: { a: 1 } });
    expect(parseConfigText('[1]')).toEqual({ error: 'The configuration must be a JSON object ({ … })' });
    expect('error' in parseConfigText('{"a":')).toBe(true);
  });
});
