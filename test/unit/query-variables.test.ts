/** Binding variables: a type from the declared type or from the JSON value, and the errors of SPEC §4. */
import t from 'tap';
import { bindVariables, type VariableType } from '../../src/query/clickhouse/variables.ts';
import { AppError } from '../../src/errors/app-error.ts';

function bound(value: unknown, declared?: VariableType): { type: string; value: unknown } | string {
  try {
    const b = bindVariables(['v'], { v: value }, declared ? { v: declared } : {}).get('v')!;
    return { type: b.type, value: b.value };
  } catch (err) {
    if (err instanceof AppError) return `${err.code}: ${err.message}`;
    throw err;
  }
}

t.test('a type from the JSON value', (t) => {
  t.same(bound('x'), { type: 'String', value: 'x' });
  t.same(bound(3), { type: 'Int64', value: 3 });
  t.same(bound(-3.25), { type: 'Float64', value: -3.25 });
  t.same(bound(1e300), { type: 'Float64', value: 1e300 });
  t.same(bound(false), { type: 'Bool', value: false });
  t.same(bound(null), { type: 'Nullable(Nothing)', value: null });
  t.same(bound(['a', null]), { type: 'Array(Nullable(String))', value: ['a', null] });
  t.same(bound([1, 2.5]), { type: 'Array(Float64)', value: [1, 2.5] });
  t.same(bound([true]), { type: 'Array(Bool)', value: [true] });
  t.same(bound([]), { type: 'Array(Nothing)', value: [] });
  t.match(bound({ a: 1 }), /^invalid_variable: Variable 'v': a value is a string/);
  t.match(bound([1, 'a']), /^invalid_variable: .*one type/);
  t.match(bound([[1]]), /^invalid_variable: .*only strings, numbers/);
  t.end();
});

t.test('a type from the declared type', (t) => {
  t.same(bound('x', 'string'), { type: 'String', value: 'x' });
  t.match(bound(1, 'string'), /^invalid_variable: Variable 'v': must be a string$/);
  t.same(bound('42', 'number'), { type: 'Int64', value: 42 }, 'a number from a query string');
  t.same(bound(0.5, 'number'), { type: 'Float64', value: 0.5 });
  t.match(bound('4x', 'number'), /must be a number/);
  t.same(bound('true', 'boolean'), { type: 'Bool', value: true });
  t.match(bound('yes', 'boolean'), /must be true or false/);
  t.same(bound('2026-02-28', 'date'), { type: 'Date', value: '2026-02-28' });
  t.match(bound('2026-02-30', 'date'), /must be a date, YYYY-MM-DD/);
  t.match(bound('2026-2-3', 'date'), /must be a date/);
  for (const leap of ['2024-02-29', '2000-02-29', '2026-12-31', '2026-04-30']) {
    t.same(bound(leap, 'date'), { type: 'Date', value: leap }, leap);
  }
  for (const none of ['2026-02-29', '2100-02-29', '2026-04-31', '2026-13-01', '2026-00-10', '2026-01-00']) {
    t.match(bound(none, 'date'), /must be a date/, none);
  }
  t.same(bound('2026-01-31T12:00:00Z', 'datetime'), {
    type: "DateTime64(6, 'UTC')",
    value: '2026-01-31 12:00:00.000',
  });
  t.same(bound('2026-01-31T12:00:00+02:00', 'datetime'), {
    type: "DateTime64(6, 'UTC')",
    value: '2026-01-31 10:00:00.000',
  });
  t.same(
    bound('2026-01-31 12:00', 'datetime'),
    { type: "DateTime64(6, 'UTC')", value: '2026-01-31 12:00:00.000' },
    'no offset: UTC',
  );
  t.same(bound('2026-01-31', 'datetime'), { type: "DateTime64(6, 'UTC')", value: '2026-01-31 00:00:00.000' });
  t.match(bound('yesterday', 'datetime'), /ISO 8601/);
  t.same(bound(['a'], 'list'), { type: 'Array(String)', value: ['a'] });
  t.match(bound('a', 'list'), /must be a list/);
  t.end();
});

t.test("a number past what a double holds (JSON 1e400 is Infinity) is the caller's error", (t) => {
  const finite = /^invalid_variable: Variable 'v': .*must be finite, within ±1\.8e308/;
  for (const n of [Infinity, -Infinity, NaN]) {
    t.match(bound(n), finite, `${n}`);
    t.match(bound([1, n]), finite, `${n} in a list`);
    t.match(bound([null, n], 'list'), finite, `${n} in a declared list`);
    t.match(bound(n, 'number'), Number.isNaN(n) ? /must be a number/ : finite, `${n} declared a number`);
  }
  t.match(bound('1e400', 'number'), finite, 'a number from a query string');
  t.same(bound(Number.MAX_VALUE), { type: 'Float64', value: Number.MAX_VALUE }, 'the largest double binds');
  t.end();
});

t.test('missing and unknown variables; parameter names', (t) => {
  t.throws(() => bindVariables(['a', 'b'], { b: 1 }), {
    code: 'missing_variable',
    message: "Required variable(s) 'a' not provided",
  });
  t.throws(() => bindVariables(['a'], { a: 1, z: 2 }), {
    code: 'unknown_variable',
    message: "The query uses no variable 'z'; it uses 'a'",
  });
  const b = bindVariables(['plain', '$odd'], { plain: 1, $odd: 2 });
  t.same(
    [...b.values()].map((x) => x.param),
    ['var_plain', 'var1'],
  );
  t.end();
});
