import { describe, expect, it } from 'vitest';
import { cronExpressionProblem, parseCronExpression, parseSchedule, timeZoneProblem } from './schedule-expression.js';

// The parser the web service and the dashboard share: what it refuses, and how it says so.
describe('cron expression problems in words', () => {
  it('accepts the 5-field forms both the platform and OpenClaw run', () => {
    for (const expr of ['* * * * *', '0 9 * * 1-5', '*/15 * * * *', '0 0 1 jan,jul *', ' 30 8 * * MON-FRI ', '0 0 29 2 *', '0 0 * * 7']) {
      expect([expr, cronExpressionProblem(expr)]).toEqual([expr, null]);
      expect(parseCronExpression(expr)).not.toBeNull();
    }
  });

  it('names the field, the value and what the field allows', () => {
    const cases: [string, string][] = [
      ['', 'the cron expression is empty'],
      ['0 9 * *', 'a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has 4'],
      ['0 0 9 * * *', 'a cron expression has 5 fields (minute hour day-of-month month day-of-week), this one has 6'],
      ['60 * * * *', 'the minute field 60 is out of range (use 0-59)'],
      ['* 24 * * *', 'the hour field 24 is out of range (use 0-23)'],
      ['* * 0 * *', 'the day-of-month field 0 is out of range (use 1-31)'],
      ['* * * 13 *', 'the month field 13 is out of range (use 1-12 or jan-dec)'],
      ['* * * * 8', 'the day-of-week field 8 is out of range (use 0-7 (0 and 7 are Sunday) or sun-sat)'],
      ['* * * smarch *', 'the month field “smarch” is not a month (use 1-12 or jan-dec)'],
      ['5-1 * * * *', 'the minute field range 5-1 runs backwards (write the lower value first)'],
      ['*/0 * * * *', 'the minute field step /0 must be at least 1'],
      ['1,,2 * * * *', 'the minute field has an empty item in its list (two commas, or a comma at an end)'],
      ['*-5 * * * *', 'the minute field cannot read “*-5”: * is already the whole range'],
      ['? * * * *', 'the minute field cannot read “?”: use a number, a range like 1-5, a step like */15, or a list like 1,15'],
      ['@daily', 'nicknames like @daily are not supported: write the 5 fields, for example 0 0 * * * for daily'],
      ['0 0 30 2 *', 'it never runs: no month in it has that day (for example 30 2 is 30 February)'],
      ['0 0 31 4,6,9,11 *', 'it never runs: no month in it has that day (for example 30 2 is 30 February)'],
    ];
    for (const [expr, problem] of cases) {
      expect([expr, cronExpressionProblem(expr)]).toEqual([expr, problem]);
      expect(parseCronExpression(expr)).toBeNull();
    }
    expect(cronExpressionProblem(`0 ${'1,'.repeat(120)}1 * * *`)).toBe('the cron expression is longer than 200 characters');
  });

  it('time zones are the IANA names Intl knows', () => {
    expect(timeZoneProblem('Europe/London')).toBeNull();
    expect(timeZoneProblem('UTC')).toBeNull();
    expect(timeZoneProblem('Mars/Olympus')).toBe('“Mars/Olympus” is not a time zone: use a name like Europe/London or UTC');
    expect(timeZoneProblem('  ')).toBe('the time zone must be a name like Europe/London');
  });

  it('scheduled tasks also take every:<n>m|h', () => {
    expect(parseSchedule('every:5m')).toEqual({ kind: 'every', ms: 300_000 });
    expect(parseSchedule('every:0m')).toBeNull();
    expect(parseSchedule('61 * * * *')).toBeNull();
  });
});
