import t from 'tap';
import { isUuid, uuidv7 } from '../../src/core/uuid.ts';
import { chTime } from '../../src/store/clickhouse-store.ts';

t.test('chTime matches the ISO form for any millisecond, across days and years', (t) => {
  const samples = [
    0,
    1,
    999,
    1000,
    59_999,
    86_399_999,
    86_400_000,
    1_700_000_000_123,
    1_732_147_199_999,
    -1,
    -86_400_001,
    Date.UTC(1, 0, 1),
    Date.UTC(1899, 11, 31, 23, 59, 59, 999),
    Date.UTC(2299, 11, 31, 23, 59, 59, 999),
  ];
  for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 4e12) - 1e12);
  for (const ms of samples) {
    const iso = new Date(ms).toISOString();
    t.equal(chTime(ms), `${iso.slice(0, 10)} ${iso.slice(11, 23)}`, String(ms));
  }
  t.equal(chTime(1_700_000_000_123.9), '2023-11-14 22:13:20.123', 'a fractional millisecond is cut');
  t.end();
});

t.test('uuidv7 carries the time, version 7 and the RFC variant, and does not repeat', (t) => {
  const now = Date.UTC(2026, 10, 21, 12, 0, 0, 5);
  const u = uuidv7(now);
  t.ok(isUuid(u));
  t.equal(u[14], '7', 'version');
  t.match(u[19]!, /[89ab]/, 'variant');
  t.equal(parseInt(u.slice(0, 8) + u.slice(9, 13), 16), now, 'the first 48 bits are the milliseconds');
  const many = new Set(Array.from({ length: 10_000 }, () => uuidv7(now)));
  t.equal(many.size, 10_000);
  t.end();
});
