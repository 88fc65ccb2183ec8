import { readFileSync } from 'node:fs';
import t from 'tap';
import { AppError, errorBody, toAppError } from '../../src/errors/app-error.ts';
import { ERROR_CODES, statusOf } from '../../src/errors/codes.ts';

t.test('every error code is documented in docs/errors.md with its status', (t) => {
  const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  for (const code of Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[]) {
    const row = doc.split('\n').find((line) => new RegExp(`^\\|\\s*\`${code}\`\\s*\\|`).test(line));
    t.ok(row, `${code} has a row`);
    t.match(
      row ?? '',
      new RegExp(`\\|\\s*${statusOf(code)}\\s*\\|`),
      `${code} row names status ${statusOf(code)}`,
    );
  }
  t.end();
});

t.test('an AppError turns into the SPEC §1 body', (t) => {
  const err = new AppError('invalid_event', { detail: 'Event 2: bad.', attr: 'properties' });
  t.equal(err.status, 400);
  t.same(errorBody(err), {
    type: 'validation_error',
    code: 'invalid_event',
    detail: 'Event 2: bad.',
    attr: 'properties',
  });
  t.end();
});

t.test('a foreign error becomes a 500 that reveals nothing of its cause', (t) => {
  const secret = new Error('connection to clickhouse://admin:hunter2@db failed');
  const err = toAppError(secret);
  t.equal(err.status, 500);
  t.equal(err.code, 'server_error');
  t.notMatch(JSON.stringify(errorBody(err)), /hunter2|clickhouse/);
  t.equal(err.cause, secret, 'the cause is kept for the log');
  t.end();
});
