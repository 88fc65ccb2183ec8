import t from 'tap';
import { readPayload } from '../../src/capture/payload.ts';
import { AppError } from '../../src/errors/app-error.ts';

// A server zone other than UTC, so that reading a time without a zone in local time would show.
process.env['TZ'] = 'Asia/Kolkata';

const K = 'phc_key';

function refusal(fn: () => unknown): { code: string; attr: string | null } {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return { code: err.code, attr: err.attr };
    throw err;
  }
  throw new Error('accepted');
}

t.test('shapes', (t) => {
  const single = { api_key: K, event: 'a', distinct_id: 'd' };
  t.same(readPayload(single, false, undefined).items, [single], 'a single event is one item');
  const array = [
    { api_key: K, event: 'a' },
    { api_key: K, event: 'b' },
  ];
  t.same(readPayload(array, false, undefined).items, array, 'an array is its items');
  const batch = { api_key: K, batch: [{ event: 'a' }, { event: 'b' }] };
  t.same(readPayload(batch, false, undefined).items, batch.batch, 'a batch object is its batch');
  t.same(readPayload(batch, true, undefined).items, batch.batch, 'on /batch/ too');
  // Current rule: /batch/ refuses an object without `batch`, but reads a top-level array as the batch.
  t.same(readPayload(array, true, undefined).items, array, 'an array on /batch/ is read as the batch');
  t.end();
});

t.test('batch missing, not an array, or empty is empty_batch', (t) => {
  const cases: [string, unknown, boolean][] = [
    ['object without batch on /batch/', { api_key: K, event: 'a', distinct_id: 'd' }, true],
    ['batch a string', { api_key: K, batch: 'x' }, false],
    ['batch an object', { api_key: K, batch: { event: 'a' } }, false],
    ['batch null', { api_key: K, batch: null }, false],
    ['batch empty', { api_key: K, batch: [] }, true],
    ['empty array', [], false],
  ];
  for (const [name, value, batchRoute] of cases)
    t.same(
      refusal(() => readPayload(value, batchRoute, undefined)),
      { code: 'empty_batch', attr: 'batch' },
      name,
    );
  t.end();
});

t.test(
  'a body that is no object or array is invalid_payload; an item that is no object is invalid_event',
  (t) => {
    for (const value of ['s', 1, null, true])
      t.equal(
        refusal(() => readPayload(value, false, undefined)).code,
        'invalid_payload',
        JSON.stringify(value),
      );
    t.same(
      refusal(() => readPayload({ api_key: K, batch: [{ event: 'a' }, [1]] }, false, undefined)),
      {
        code: 'invalid_event',
        attr: 'batch[1]',
      },
    );
    t.same(
      refusal(() => readPayload([{ api_key: K }, null], false, undefined)),
      {
        code: 'invalid_event',
        attr: 'batch[1]',
      },
    );
    t.end();
  },
);

t.test('the api key and its aliases', (t) => {
  const found = (value: unknown) => readPayload(value, false, undefined).token;
  t.equal(found({ api_key: K, event: 'a' }), K, 'api_key');
  t.equal(found({ token: K, event: 'a' }), K, 'token');
  t.equal(found({ $token: K, event: 'a' }), K, '$token');
  t.equal(found({ event: 'a', properties: { token: K } }), K, 'properties.token');
  t.equal(found({ event: 'a', properties: { $token: K } }), K, 'properties.$token');
  t.equal(found({ batch: [{ event: 'a', api_key: K }] }), K, 'on a batch item');
  t.equal(found([{ event: 'a' }, { event: 'b', properties: { token: K } }]), K, 'on one item of an array');
  t.equal(found({ api_key: ` ${K}\n`, event: 'a' }), K, 'trimmed');
  t.equal(
    found({ api_key: K, token: K, batch: [{ properties: { token: K } }] }),
    K,
    'the same key many times',
  );

  t.same(
    refusal(() => found({ event: 'a' })),
    { code: 'missing_api_key', attr: 'api_key' },
  );
  t.equal(refusal(() => found({ api_key: '', token: '  ', $token: 5, event: 'a' })).code, 'missing_api_key');
  t.equal(refusal(() => found({ api_key: null, event: 'a', properties: 'x' })).code, 'missing_api_key');
  t.same(
    refusal(() => found({ api_key: K, token: 'other', event: 'a' })),
    {
      code: 'inconsistent_api_key',
      attr: 'api_key',
    },
  );
  t.equal(
    refusal(() => found({ api_key: K, batch: [{ event: 'a', properties: { $token: 'other' } }] })).code,
    'inconsistent_api_key',
  );
  t.end();
});

t.test('historical_migration is only the boolean true', (t) => {
  const h = (v: unknown) =>
    readPayload({ api_key: K, historical_migration: v, batch: [{}] }, true, undefined).historical;
  t.equal(h(true), true);
  for (const v of [false, 'true', 1, undefined]) t.equal(h(v), false, String(v));
  t.equal(
    readPayload([{ api_key: K, historical_migration: true }], false, undefined).historical,
    false,
    'not on array items',
  );
  t.end();
});

t.test('sent_at', (t) => {
  const at = (sentAt: unknown, query?: string) =>
    readPayload({ api_key: K, sent_at: sentAt, batch: [{}] }, true, query).sentAt;
  t.equal(at('2024-05-06T07:08:09.010Z'), Date.UTC(2024, 4, 6, 7, 8, 9, 10), 'ISO');
  t.equal(at('2024-05-06T09:08:09.010+02:00'), Date.UTC(2024, 4, 6, 7, 8, 9, 10), 'with an offset');
  t.equal(at('2024-05-06 07:08:09'), Date.UTC(2024, 4, 6, 7, 8, 9), 'no zone is UTC');
  t.equal(at(undefined, '1715000000123'), 1715000000123, '?_= milliseconds');
  t.equal(
    at('2024-05-06T07:08:09Z', '1715000000123'),
    Date.UTC(2024, 4, 6, 7, 8, 9),
    'the body wins over ?_=',
  );
  t.equal(at('garbage', '1715000000123'), 1715000000123, 'an unreadable body sent_at falls back to ?_=');
  t.equal(at(1715000000123), undefined, 'a number in the body is not read');
  t.equal(at(undefined, 'abc'), undefined);
  t.equal(at(undefined, '123'), undefined, 'too short to be milliseconds');
  t.equal(at(undefined), undefined);
  t.end();
});
