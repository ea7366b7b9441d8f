import { describe, expect, test } from 'vitest';
import { Chalk } from 'chalk';
import { exitCodeForStatus } from '../../src/cli/exit-codes.js';
import { plainCell, relativeTime, humanCell } from '../../src/cli/output/format.js';
import { renderView } from '../../src/cli/output/render.js';
import { table, record } from '../../src/cli/output/view.js';
import { parseExpires } from '../../src/cli/key-expiry.js';
import { parseScopeFlag } from '../../src/cli/prompts/key-wizard.js';
import { ConfigStore, resolveCredentials, DEFAULT_BASE_URL } from '../../src/cli/config.js';
import { redactJson, redactText } from '../../src/client/redact.js';
import { tempDir } from '../cli/support.js';

describe('exit codes by HTTP status', () => {
  test.each([
    [400, 2],
    [413, 2],
    [422, 2],
    [401, 4],
    [403, 4],
    [404, 3],
    [409, 5],
    [412, 5],
    [429, 1],
    [500, 1],
    [503, 1],
  ])('%i -> %i', (status, code) => expect(exitCodeForStatus(status)).toBe(code));
});

describe('cells', () => {
  const now = Date.parse('2026-01-01T12:00:00.000Z');
  test('relative times for people', () => {
    expect(relativeTime('2026-01-01T11:57:00.000Z', now)).toBe('3 min. ago');
    expect(relativeTime('2026-01-03T12:00:00.000Z', now)).toBe('in 2 days');
  });
  test('pipes get ISO times and one line per row', () => {
    expect(plainCell('2026-01-01T11:57:00.000Z', 'time')).toBe('2026-01-01T11:57:00.000Z');
    expect(plainCell('two\nlines\tand tab', 'text')).toBe('two lines and tab');
    expect(plainCell({ a: 1 }, 'json')).toBe('{"a":1}');
    expect(plainCell(null, 'text')).toBe('');
  });
  test('statuses are coloured on a terminal', () => {
    const chalk = new Chalk({ level: 1 });
    expect(humanCell('ACTIVE', 'status', chalk)).toBe(chalk.green('ACTIVE'));
    expect(humanCell('FAILED', 'status', chalk)).toBe(chalk.red('FAILED'));
    expect(humanCell('DEPLOYING', 'status', chalk)).toBe(chalk.yellow('DEPLOYING'));
  });
});

describe('rendering', () => {
  const rows = [{ id: 'a', status: 'ACTIVE' }];
  const view = table<{ id: string; status: string }>(
    [
      { header: 'ID', value: (r) => r.id },
      { header: 'STATUS', value: (r) => r.status, format: 'status' },
    ],
    rows,
    'None.',
  );
  test('tab-separated without a header when piped', async () => {
    expect(await renderView(view, { tty: false, chalk: new Chalk({ level: 0 }) })).toEqual({ stdout: 'a\tACTIVE\n' });
  });
  test('a table with a header on a terminal', async () => {
    const out = (await renderView(view, { tty: true, chalk: new Chalk({ level: 0 }) })).stdout;
    expect(out.split('\n').map((l) => l.trim().split(/\s+/))).toEqual([['ID', 'STATUS'], ['a', 'ACTIVE'], ['']]);
  });
  test('an empty list prints nothing and leaves a note for stderr', async () => {
    expect(await renderView({ ...view, rows: [] } as never, { tty: true, chalk: new Chalk({ level: 0 }) })).toEqual({ stdout: '', note: 'None.' });
  });
  test('a record is label<TAB>value when piped', async () => {
    expect(
      (
        await renderView(
          record([
            ['ID', 'x'],
            ['Dirty', false, 'bool'],
          ]),
          { tty: false, chalk: new Chalk({ level: 0 }) },
        )
      ).stdout,
    ).toBe('ID\tx\nDirty\tfalse\n');
  });
});

describe('--expires and --scope', () => {
  const now = Date.parse('2026-01-01T00:00:00.000Z');
  test('durations, dates and never', () => {
    expect(parseExpires('90d', now)).toBe('2026-04-01T00:00:00.000Z');
    expect(parseExpires('12h', now)).toBe('2026-01-01T12:00:00.000Z');
    expect(parseExpires('never', now)).toBeNull();
    expect(parseExpires('2027-05-01', now)).toBe('2027-05-01T00:00:00.000Z');
    expect(() => parseExpires('2020-01-01', now)).toThrow('in the past');
    expect(() => parseExpires('soon', now)).toThrow('is not a duration');
  });
  test('a role-less scope takes the preset’s role for its type', () => {
    const deploy = { id: 'deploy' as const, name: 'Deploy', use: '', description: '', scopes: [{ resource_type: 'agent' as const, role: 'editor' as const }] };
    expect(parseScopeFlag('agent:default/bot', deploy)).toEqual({ resource_type: 'agent', resource: 'default/bot', role: 'editor' });
    expect(parseScopeFlag('agent:agt_1:viewer', deploy)).toEqual({ resource_type: 'agent', resource: 'agt_1', role: 'viewer' });
    expect(() => parseScopeFlag('project:prj_1', deploy)).toThrow('has no role');
    expect(() => parseScopeFlag('agent:agt_1:admin', undefined)).toThrow('admin is not a role for agent');
    expect(() => parseScopeFlag('table:x:admin', undefined)).toThrow('is not type:id:role');
  });
});

describe('credentials', () => {
  test('flag > environment > profile > default, and environment overrides are reported', async () => {
    const dir = tempDir();
    const store = new ConfigStore(dir.dir);
    await store.updateProfile('p', { base_url: 'http://profile', api_key: 'agk_profile' });
    await store.setCurrentProfile('p');
    expect(resolveCredentials({}, {}, store)).toMatchObject({
      profile: 'p',
      profileSource: 'config',
      baseUrl: 'http://profile',
      baseUrlSource: 'profile',
      apiKey: 'agk_profile',
      apiKeySource: 'profile',
      envOverrides: [],
    });
    expect(resolveCredentials({}, { AGENTCTL_API_KEY: 'agk_env' }, store)).toMatchObject({
      apiKey: 'agk_env',
      apiKeySource: 'env',
      envOverrides: ['AGENTCTL_API_KEY'],
    });
    expect(resolveCredentials({ apiKey: 'agk_flag' }, { AGENTCTL_API_KEY: 'agk_env' }, store)).toMatchObject({
      apiKey: 'agk_flag',
      apiKeySource: 'flag',
      envOverrides: [],
    });
    expect(resolveCredentials({ profile: 'none' }, {}, store)).toMatchObject({
      profile: 'none',
      profileSource: 'flag',
      baseUrl: DEFAULT_BASE_URL,
      baseUrlSource: 'default',
      apiKey: undefined,
    });
    expect(resolveCredentials({}, { AGENTCTL_PROFILE: 'other' }, store)).toMatchObject({ profile: 'other', profileSource: 'env' });
    dir.remove();
  });
});

describe('redaction', () => {
  test('agk_ strings and key fields never reach a trace', () => {
    expect(redactText('Bearer agk_abcDEF123 and agk_X')).toBe('Bearer agk_[redacted] and agk_[redacted]');
    expect(redactJson({ key: 'secret', api_key: { key_prefix: 'agk_abcdefgh' }, list: ['agk_zz'] })).toEqual({
      key: '[redacted]',
      api_key: { key_prefix: 'agk_[redacted]' },
      list: ['agk_[redacted]'],
    });
  });

  test('a body field an endpoint marks as a secret value is redacted whatever its name; the same name elsewhere is not', () => {
    expect(redactJson({ value: 'sk-live-1', environment: 'production' }, ['value'])).toEqual({ value: '[redacted]', environment: 'production' });
    expect(redactJson({ state: { value: 3 } }, ['value'])).toEqual({ state: { value: 3 } });
    expect(redactJson({ value: 'kept' })).toEqual({ value: 'kept' });
  });
});
