/**
 * Property type detection, with PostHog's own cases (its property-definitions service's tests of
 * `detect_property_type`) recreated: what a property is typed as decides how every query reads it.
 */
import t from 'tap';
import { detectPropertyType } from '../../src/ingest/property-types.ts';

const NOW = Math.floor(Date.UTC(2026, 0, 15) / 1000);
const detect = (key: string, value: unknown): string | undefined => detectPropertyType(key, value, NOW);

t.test('date-shaped strings are DateTimes whatever the key', (t) => {
  for (const value of [
    '2025-03-11T09:48:12.863948+00:00',
    '2023-12-13T15:45:30Z',
    '2023-12-13T15:45:30.123Z',
    '2023-12-13T15:45:30+00:00',
    '2023-12-13T15:45:30-07:00',
    '2023/12/13 15:45:30Z',
    '2023/12/13 15:45:30',
    '12-13-2023 15:45:30-07:00',
    '12/13/2023 15:45:30-07',
    '2023-12-13 15:45:30',
    '12/13/2023T15:45:30',
    '2023-13-12T15:45:30',
    // date fragments that show the intent
    '2023-12-13',
    '2023/12/13',
    '12-13-2023',
    '12/13/2023',
    // RFC 3339 with a lower-case separator, and RFC 2822
    '2023-12-13t15:45:30z',
    'Tue, 1 Jul 2003 10:52:37 +0200',
    '13 Dec 2023 15:45 GMT',
  ]) {
    t.equal(detect('random_property', value), 'DateTime', value);
  }
  t.equal(detect('random_property', '  2023-12-13  '), 'DateTime', 'trimmed first');
  t.end();
});

t.test('a recent Unix time is a DateTime only under a key that names a time', (t) => {
  const recent = NOW - 1000;
  for (const key of [
    'time',
    'timestamp',
    'TIMESTAMP',
    'created_time',
    'sent_at',
    'random_property_has_datetime_value',
    'updatedAt',
    'last-seen-at',
    'sent_date',
    'Created_At',
  ]) {
    t.equal(detect(key, recent), 'DateTime', key);
  }
  t.equal(detect('created_at', Date.UTC(2026, 0, 14)), 'DateTime', 'milliseconds are recent too');
  t.equal(detect('hedgehogs_enumerated', recent), 'Numeric', 'no time word in the key');
  t.equal(detect('thyme_stamp', recent), 'Numeric', 'thyme is not time');
  t.equal(detect('created_at', recent + 0.5), 'Numeric', 'a fraction is not a Unix time (PostHog: as_u64)');
  t.equal(detect('created_at', -recent), 'Numeric');
  t.end();
});

t.test('a Unix time older than six months stays Numeric, whatever the key', (t) => {
  for (const key of [
    'timestamp',
    'TIMESTAMP',
    'user_timestamp',
    'user_TIMESTAMP',
    'timestampValue',
    'time',
    'TIME',
    'created_time',
    'created_at',
    'createdAt',
    'updated_at',
    'created_TIME',
    'timeValue',
    'sent-at',
    'updated-at',
    'was_detected_at',
  ]) {
    t.equal(detect(key, 1639400730), 'Numeric', key);
  }
  t.equal(detect('count', 42), 'Numeric');
  t.equal(detect('amount', 100), 'Numeric');
  t.equal(detect('price', 1.23), 'Numeric');
  t.end();
});

t.test('strings that are not dates stay Strings, even under a time key', (t) => {
  t.equal(detect('timestamp', '15:45:30'), 'String', 'a time without a date');
  t.equal(detect('signup_date', 'not a date'), 'String');
  t.equal(detect('created_at', 'not a date'), 'String');
  t.equal(detect('timestamp', 'any value'), 'String');
  t.equal(detect('created_time', 'any value'), 'String');
  t.equal(detect('sent_at', 'any value'), 'String');
  t.equal(detect('date_of_purchase', 'any value'), 'String');
  t.equal(detect('random', ''), 'String', 'the empty string');
  t.equal(detect('random', '2023-02-30'), 'DateTime', 'the loose shape does not check the calendar');
  t.equal(detect('random', '2023-02-30T10:00:00Z'), 'DateTime', 'nor does the shape RFC 3339 also has');
  t.equal(detect('random', '30 Feb 2023 10:00:00 +0000'), 'String', 'RFC 2822 checks the calendar');
  t.end();
});

t.test('numbers sent as text are Strings, as in PostHog since its property-definitions service', (t) => {
  t.equal(detect('anything', '10'), 'String');
  t.equal(detect('anything', '1.23'), 'String');
  t.equal(detect('anything', 10), 'Numeric');
  t.end();
});

t.test('booleans, and the four spellings of boolean text', (t) => {
  t.equal(detect('anything', true), 'Boolean');
  t.equal(detect('anything', false), 'Boolean');
  t.equal(detect('signup_date', 'true'), 'Boolean', 'before the time rules');
  t.equal(detect('timestamp', 'false'), 'Boolean');
  t.equal(detect('updatedAt', 'true'), 'Boolean');
  t.equal(detect('posthog_is_awesome', 'FALSE'), 'Boolean');
  t.equal(detect('padded', ' true '), 'Boolean', 'trimmed');
  t.equal(detect('anything', 'True'), 'String', 'not a spelling PostHog takes');
  t.end();
});

t.test('null, arrays and objects have no type', (t) => {
  t.equal(detect('anything', null), undefined);
  t.equal(detect('anything', [1, 2]), undefined);
  t.equal(detect('anything', { a: 1 }), undefined);
  t.equal(detect('utm_source', null), 'String', 'the key rules come first');
  t.end();
});

t.test('utm, feature flag and survey response keys are always Strings, in any case', (t) => {
  const cases: [string, unknown][] = [
    ['$initial_utm_campaign', '2025-03-11T09:48:12.863948+00:00'],
    ['$initial_utm_source', '2023-12-13'],
    ['$initial_utm_medium', '2023-12-13T15:45:30Z'],
    ['$initial_utm_content', 12345],
    ['$initial_utm_term', 42],
    ['$initial_utm_campaign', 'true'],
    ['$initial_utm_source', true],
    ['$initial_utm_campaign', 'summer_sale'],
    ['utm_source', '2025-03-11T09:48:12.863948+00:00'],
    ['utm_campaign', 12345],
    ['utm_medium', 'true'],
    ['utm_content', 'google'],
    ['UTM_Source', 12345],
    ['$Initial_UTM_Campaign', '2023-12-13'],
    ['$FEATURE/My-Flag', true],
    ['$feature/my-flag', true],
    ['$Feature_Flag_Response', true],
    ['$feature_flag_response', 'variant-a'],
    ['$Survey_Response_2', 7],
    ['$survey_response', 7],
    ['UTM_Sourceǅ', 12345],
  ];
  for (const [key, value] of cases)
    t.equal(detect(key, value), 'String', `${key} = ${JSON.stringify(value)}`);
  t.end();
});

t.test('the six months are counted from the present', (t) => {
  const sevenMonthsAgo = NOW - 7 * 30 * 86400;
  t.equal(detectPropertyType('time', sevenMonthsAgo, NOW), 'Numeric');
  t.equal(detectPropertyType('time', sevenMonthsAgo, NOW - 60 * 86400), 'DateTime');
  t.equal(detectPropertyType('time', Math.floor(Date.now() / 1000)), 'DateTime', 'the clock by default');
  t.end();
});
