import t from 'tap';
import { isUuid, uuidv7 } from '../../src/core/uuid.ts';
import { chTime } from '../../src/store/ch-time.ts';

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
  // The last two texts are remembered: repeats and alternations must still give each its own.
  const [a, b, c] = [1_700_000_000_123, 1_700_000_000_124, 86_400_000];
  for (const ms of [a, b, a, b, c, a, c, b, b, c]) {
    const iso = new Date(ms).toISOString();
    t.equal(chTime(ms), `${iso.slice(0, 10)} ${iso.slice(11, 23)}`, `again ${ms}`);
  }
  // Texts are kept per minute: runs within a minute, across minute, hour and day ends, and jumps back.
  const iso = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
  let wrong = 0;
  for (const base of [Date.UTC(2024, 0, 1) - 90_000, -120_500, Date.UTC(2023, 11, 31, 23, 58)]) {
    for (let ms = base; ms < base + 200_000; ms += 997) if (chTime(ms) !== iso(ms)) wrong++;
    for (let i = 0; i < 2000; i++) {
      const ms = base + Math.floor(Math.random() * 4e9) - 2e9;
      if (chTime(ms) !== iso(ms)) wrong++;
    }
  }
  t.equal(wrong, 0, 'every text equals the ISO form');
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
  // Every random digit takes every value it may (the pool refills many times over 10,000 uuids).
  for (const position of [15, 16, 17, 20, 21, 22, 24, 29, 35]) {
    const seen = new Set([...many].map((v) => v[position]));
    t.equal(seen.size, 16, `digit ${position} is random`);
  }
  t.same(new Set([...many].map((v) => v[19])), new Set(['8', '9', 'a', 'b']), 'the variant digit');
  const later = now + 86_400_000 * 400;
  const [a, b, c] = [uuidv7(later), uuidv7(now), uuidv7(later)];
  t.equal(parseInt(a.slice(0, 8) + a.slice(9, 13), 16), later, 'a uuid of another millisecond has its time');
  t.equal(parseInt(b.slice(0, 8) + b.slice(9, 13), 16), now);
  t.equal(c.slice(0, 13), a.slice(0, 13));
  t.end();
});
