/**
 * HogQLX in a query: a tag (`<a href={url}>…</a>`) or an object literal (`{'k': v}`) is a value PostHog's UI
 * renders, and HogQL sends it to ClickHouse as a tuple that says what it is:
 * `('__hx_tag', name, attribute, value, …)` for a tag, `('__hx_tag', '__hx_obj', key, value, …)` for an object,
 * with arrays and tuples inside either as tuples of the same. A caller reads the tuple as a JSON array.
 */
import type { Dict, Expr, Tag } from '../dialect/mod.ts';
import { QueryResolveError } from './errors.ts';

/** The components and HTML tags PostHog renders (its `HOGQLX_COMPONENTS` and `HOGQLX_TAGS`). */
const RENDERED = new Set([
  'Sparkline',
  'RecordingButton',
  'ExplainCSPReport',
  'a',
  'blink',
  'marquee',
  'redacted',
  ...'em strong span div p pre code h1 h2 h3 h4 h5 h6 ul ol li table thead tbody tr th td blockquote hr b i u'.split(
    ' ',
  ),
]);

const text = (value: string): Expr => ({ kind: 'string', value });

/** The tuple a tag or an object literal stands for. */
export function hogqlxTuple(e: Tag | Dict): Expr {
  if (e.kind === 'dict') {
    const items = [text('__hx_tag'), text('__hx_obj')];
    for (const { key, value } of e.entries) items.push(inner(key), inner(value));
    return { kind: 'tuple', items, ...(e.pos ? { pos: e.pos } : {}) };
  }
  if (!RENDERED.has(e.name)) {
    const hint = e.name === 'HogQLQuery' ? ': <HogQLQuery query="…" /> stands only in FROM' : '';
    throw new QueryResolveError(`<${e.name}> is not a HogQLX tag Weir renders${hint}`, e.pos);
  }
  const items = [text('__hx_tag'), text(e.name)];
  for (const a of e.attributes) {
    items.push(text(a.name), Array.isArray(a.value) ? list(a.value) : inner(a.value));
  }
  return { kind: 'tuple', items, ...(e.pos ? { pos: e.pos } : {}) };
}

function list(items: readonly Expr[]): Expr {
  return { kind: 'tuple', items: items.map(inner) };
}

function inner(e: Expr): Expr {
  switch (e.kind) {
    case 'tag':
    case 'dict':
      return hogqlxTuple(e);
    case 'array':
    case 'tuple':
      return { ...list(e.items), ...(e.pos ? { pos: e.pos } : {}) };
    default:
      return e;
  }
}
