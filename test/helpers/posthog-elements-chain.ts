/**
 * The `elements_chain` PostHog's ingestion makes of an event's `$elements` (plugin-server
 * `src/utils/db/elements-chain.ts`: `extractElements`, then `elementsToString`), written again here so that a
 * test can hold Weir's chain against PostHog's rules rather than against Weir's own code.
 */

interface Element {
  tag_name?: string;
  text?: string;
  href?: string;
  attr_class?: string[];
  attr_id?: string;
  nth_child?: unknown;
  nth_of_type?: unknown;
  attributes: Record<string, unknown>;
}

/** PostHog's chain of `$elements` ('' when there are none, as its `getElementsChain` leaves it). */
export function posthogElementsChain(elements: unknown): string {
  if (!Array.isArray(elements) || elements.length === 0) return '';
  return (elements as Record<string, unknown>[]).map((el) => elementString(extract(el))).join(';');
}

function extract(el: Record<string, unknown>): Element {
  const cls = el['attr__class'];
  const out: Element = {
    attributes: Object.fromEntries(Object.entries(el).filter(([key]) => key.startsWith('attr__'))),
  };
  if (typeof el['tag_name'] === 'string') out.tag_name = el['tag_name'];
  if (typeof el['$el_text'] === 'string') out.text = el['$el_text'].slice(0, 400);
  if (typeof el['attr__href'] === 'string') out.href = el['attr__href'].slice(0, 2048);
  // An empty class attribute is no class (PostHog's `extractAttrClass`: a falsy value is undefined).
  if (Array.isArray(cls)) out.attr_class = cls.map(String);
  else if (typeof cls === 'string' && cls !== '') out.attr_class = cls.split(' ');
  if (typeof el['attr__id'] === 'string') out.attr_id = el['attr__id'];
  out.nth_child = el['nth_child'];
  out.nth_of_type = el['nth_of_type'];
  return out;
}

function elementString(el: Element): string {
  let s = el.tag_name ?? '';
  for (const c of [...(el.attr_class ?? [])].sort()) s += `.${c.replace(/"/g, '')}`;
  const attributes: Record<string, unknown> = {
    ...(el.text ? { text: el.text } : {}),
    'nth-child': el.nth_child ?? 0,
    'nth-of-type': el.nth_of_type ?? 0,
    ...(el.href ? { href: el.href } : {}),
    ...(el.attr_id ? { attr_id: el.attr_id } : {}),
    ...el.attributes,
  };
  // PostHog sorts the keys with localeCompare; Python's elements_to_string sorts by code point.
  const keys = Object.keys(attributes).sort((a, b) => a.localeCompare(b));
  return `${s}:${keys.map((k) => `${quote(k)}="${quote(String(attributes[k]))}"`).join('')}`;
}

function quote(s: string): string {
  return s.replace(/"/g, '\\"');
}
