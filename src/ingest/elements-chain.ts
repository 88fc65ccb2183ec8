/**
 * Autocapture's elements as PostHog stores them: the `elements_chain` string, one element per `;`, each
 * `tag.class1.class2:key="value"key="value"…` with the keys sorted (PostHog's `elements_to_string` in
 * posthog/models/element/element.py). posthog-js sends the chain itself (`$elements_chain`); older SDKs send
 * `$elements`, a list of element objects, which ingest turns into the chain as PostHog's ingestion does.
 */
import { cut } from '../core/well-formed.ts';

/** An element as PostHog's Element model has it. */
export interface ChainElement {
  tag_name?: string;
  attr_class?: string[];
  text?: string;
  href?: string;
  attr_id?: string;
  /** A number, or the text an SDK sent for it. */
  nth_child?: number | string;
  nth_of_type?: number | string;
  /** The element's HTML attributes, `attr__` prefixed as SDKs send them (`attr__class`, `attr__href`, …). */
  attributes: Record<string, string>;
}

/** Longest `$el_text` and `attr__href` kept, as PostHog's ingestion cuts them. */
const MAX_TEXT = 400;
const MAX_HREF = 2048;

/**
 * The `elements_chain` of an event: `$elements_chain` when the SDK sent one, else the chain of its
 * `$elements`, else ''. Reads the properties, never changes them.
 */
export function elementsChain(properties: Readonly<Record<string, unknown>>): string {
  const chain = properties['$elements_chain'];
  if (typeof chain === 'string' && chain !== '') return chain;
  const elements = properties['$elements'];
  if (!Array.isArray(elements) || elements.length === 0) return '';
  return elementsToString(extractElements(elements));
}

/** `$elements` as SDKs send them (`tag_name`, `$el_text`, `attr__*`, `nth_child`, …) as elements. */
export function extractElements(elements: readonly unknown[]): ChainElement[] {
  const out: ChainElement[] = [];
  for (const raw of elements) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue;
    const el = raw as Record<string, unknown>;
    const attributes: Record<string, string> = {};
    for (const key of Object.keys(el)) {
      const value = el[key];
      // PostHog's ingestion would fail on a null attribute value; one that says nothing is left out instead.
      if (key.startsWith('attr__') && value !== null && value !== undefined) attributes[key] = text(value);
    }
    const element: ChainElement = { attributes };
    if (typeof el['tag_name'] === 'string') element.tag_name = el['tag_name'];
    const elText = el['$el_text'];
    if (elText !== undefined && elText !== null) element.text = cut(text(elText), MAX_TEXT);
    const href = el['attr__href'];
    if (href !== undefined && href !== null) element.href = cut(text(href), MAX_HREF);
    const id = el['attr__id'];
    if (id !== undefined && id !== null) element.attr_id = text(id);
    const classes = el['attr__class'];
    if (Array.isArray(classes)) element.attr_class = classes.map(text);
    else if (typeof classes === 'string' && classes !== '') element.attr_class = classes.split(' ');
    const nthChild = el['nth_child'];
    if (typeof nthChild === 'number' || typeof nthChild === 'string') element.nth_child = nthChild;
    const nthOfType = el['nth_of_type'];
    if (typeof nthOfType === 'number' || typeof nthOfType === 'string') element.nth_of_type = nthOfType;
    out.push(element);
  }
  return out;
}

/**
 * PostHog's `elements_to_string`: tag name, classes sorted (quotes dropped), then `:` and the attributes —
 * text, nth-child and nth-of-type (0 when unknown), href, attr_id and the element's own — sorted by key,
 * each `key="value"` with the quotes in keys and values escaped as `\"`.
 */
export function elementsToString(elements: readonly ChainElement[]): string {
  const out: string[] = [];
  for (const element of elements) {
    let s = element.tag_name ?? '';
    if (element.attr_class) {
      for (const c of [...element.attr_class].sort(byCodePoint)) s += `.${c.replaceAll('"', '')}`;
    }
    const attributes: Record<string, string> = {};
    if (element.text) attributes['text'] = element.text;
    attributes['nth-child'] = String(element.nth_child ?? 0);
    attributes['nth-of-type'] = String(element.nth_of_type ?? 0);
    if (element.href) attributes['href'] = element.href;
    if (element.attr_id) attributes['attr_id'] = element.attr_id;
    Object.assign(attributes, element.attributes);
    s += ':';
    for (const key of Object.keys(attributes).sort(byCodePoint))
      s += `${escapeQuotes(key)}="${escapeQuotes(attributes[key]!)}"`;
    out.push(s);
  }
  return out.join(';');
}

/** The chain split into elements: by `;` and whitespace, except inside quoted values. */
const SPLIT_CHAIN = /(?:[^\s;"]|"(?:\\.|[^"])*")+/g;
/** The tag and classes, and the attributes after the first `:` followed by a `key=`. */
const SPLIT_CLASS_ATTRIBUTES = /^(.*?)($|:([a-zA-Z\-_0-9]*=.*))/;
/**
 * One `key="value"`: the value of at least one character, up to the first quote after a character that is
 * not a backslash (PostHog's ingestion and its Python parse read attributes this way).
 */
const ATTRIBUTE = /(.*?)="(.*?[^\\])"/g;

/**
 * PostHog's `chain_to_elements`: the elements of a chain, attribute values as stored (escapes kept), the
 * promoted keys (text, href, attr_id, nth-child, nth-of-type) back in their fields.
 */
export function chainToElements(chain: string): ChainElement[] {
  const out: ChainElement[] = [];
  for (const [part] of chain.matchAll(SPLIT_CHAIN)) {
    const m = SPLIT_CLASS_ATTRIBUTES.exec(part);
    const element: ChainElement = { attributes: {} };
    const tagPart = m?.[1] ?? '';
    if (tagPart !== '') {
      const [tag, ...classes] = tagPart.split('.');
      element.tag_name = tag!;
      if (classes.length > 0) element.attr_class = classes.filter((c) => c !== '');
    }
    for (const [, key, value] of (m?.[3] ?? '').matchAll(ATTRIBUTE)) {
      if (key === 'text') element.text = value!;
      else if (key === 'href') element.href = value!;
      else if (key === 'attr_id') element.attr_id = value!;
      else if (key === 'nth-child') element.nth_child = integerOrUndefined(value!);
      else if (key === 'nth-of-type') element.nth_of_type = integerOrUndefined(value!);
      else if (key) element.attributes[key] = value!;
    }
    out.push(element);
  }
  return out;
}

function integerOrUndefined(s: string): number | undefined {
  return /^\s*[+-]?\d+\s*$/.test(s) ? Number.parseInt(s, 10) : undefined;
}

/** A value as PostHog's ingestion writes it into the chain (`toString`); objects as their JSON. */
function text(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

function escapeQuotes(s: string): string {
  return s.replaceAll('"', '\\"');
}

/** Python's `sorted` order: by code unit, not by locale. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
