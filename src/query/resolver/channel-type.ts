/**
 * PostHog's channel classification (`sessions.$channel_type`, `persons.$virt_initial_channel_type`) and its
 * referring-domain type (`persons.$virt_initial_referring_domain_type`), written as dialect text that the
 * resolver reads like any query. The rules follow PostHog's `posthog/hogql/database/schema/channel_type.py`
 * (default rules; Weir has no per-project custom channel rules); the domains it looks up are PostHog's own
 * channel definitions, carried in `channel-definitions.txt` beside this file.
 *
 * PostHog looks the definitions up in a ClickHouse dictionary. Weir has none to read (a query may call no
 * dictionary function), so the definitions travel in the query as constant arrays, looked up with
 * `transform` (a hash lookup). The domain list is about 30 KB of text, so each classification prints it once:
 * the four lookups it needs (source and referring domain, each as written and cut to its first significant
 * subdomain) are made by one `arrayMap` over those four keys, and the rules read the codes from a lambda.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { quoteString } from '../dialect/mod.ts';

/** One row type of the definitions: PostHog's `domain_type`, `type_if_paid` and `type_if_organic`. */
export interface ChannelClass {
  readonly domainType: string | null;
  readonly paid: string | null;
  readonly organic: string | null;
}

export interface ChannelDefinitions {
  /** The classes; a name's code is its class's index here plus one (0: not listed). */
  readonly classes: readonly ChannelClass[];
  /** `utm_medium` values (PostHog's kind `medium`) → code. */
  readonly medium: ReadonlyMap<string, number>;
  /** Sources and referring domains (kind `source`) → code. */
  readonly source: ReadonlyMap<string, number>;
}

/**
 * Reads the definitions file: `= <letter> <domain_type>|<type_if_paid>|<type_if_organic>` declares a class
 * (`-` for NULL), `@medium` / `@source` starts a kind, `<letter> <name>` is a row of that kind.
 */
export function parseChannelDefinitions(text: string): ChannelDefinitions {
  const classes: ChannelClass[] = [];
  const letters = new Map<string, number>();
  const kinds = { medium: new Map<string, number>(), source: new Map<string, number>() };
  let kind: Map<string, number> | null = null;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const fail = (why: string): Error => new Error(`channel definitions, line ${i + 1}: ${why}: ${line}`);
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('= ')) {
      const m = /^= (\S) ([^|]+)\|([^|]+)\|([^|]+)$/.exec(line);
      if (!m || letters.has(m[1]!))
        throw fail('a class is `= <letter> <domain type>|<paid>|<organic>`, once');
      const value = (v: string): string | null => (v === '-' ? null : v);
      letters.set(m[1]!, classes.length + 1);
      classes.push({ domainType: value(m[2]!), paid: value(m[3]!), organic: value(m[4]!) });
      continue;
    }
    if (line === '@medium' || line === '@source') {
      kind = line === '@medium' ? kinds.medium : kinds.source;
      continue;
    }
    const code = letters.get(line[0]!);
    const name = line.slice(2);
    if (kind === null || code === undefined || line[1] !== ' ' || name === '') {
      throw fail('a row is `<class letter> <name>` under @medium or @source');
    }
    if (kind.has(name)) throw fail('the name is listed twice');
    kind.set(name, code);
  }
  return { classes, ...kinds };
}

/** PostHog's definitions, read once when the resolver is loaded. */
export const CHANNEL_DEFINITIONS: ChannelDefinitions = parseChannelDefinitions(
  readFileSync(join(import.meta.dirname, 'channel-definitions.txt'), 'utf8'),
);

/**
 * What a classification reads, each a dialect expression: the utm values, the referring domain (`$direct`
 * when there was none), `gad_source`, and whether a `gclid` / `fbclid` was there (boolean expressions).
 */
export interface ChannelInputs {
  readonly source: string;
  readonly medium: string;
  readonly campaign: string;
  readonly referringDomain: string;
  readonly gadSource: string;
  readonly hasGclid: string;
  readonly hasFbclid: string;
}

/** PostHog's `nullIf(nullIf(x, ''), 'null')`: an empty value, or the text `null`, counts as none. */
export function nullIfEmpty(expr: string): string {
  return `nullIf(nullIf(${expr}, ''), 'null')`;
}

const list = (items: readonly string[]): string => `[${items.join(', ')}]`;
const text = (v: string | null): string => (v === null ? 'NULL' : quoteString(v));

/** The lookup of a kind: `transform(key, [names], [codes], 0)`, its code, 0 when the name is not listed. */
function lookup(key: string, names: ReadonlyMap<string, number>): string {
  return `transform(${key}, ${list([...names.keys()].map(quoteString))}, ${list([...names.values()].map(String))}, 0)`;
}

/**
 * A class's value by code: `[NULL, 'Paid Search', …][code + 1]`, NULL for code 0. The leading NULL makes the
 * array's elements Nullable even when every class has a value (organic types), so a name not listed gives
 * NULL there too, not ''.
 */
function classValue(code: string, field: keyof ChannelClass): string {
  return `arrayElement(${list(['NULL', ...CHANNEL_DEFINITIONS.classes.map((c) => text(c[field]))])}, ${code} + 1)`;
}

const SHOPPING = quoteString('^(.*(([^a-df-z]|^)shop|shopping).*)$');
const VIDEO = quoteString('^(.*video.*)$');

/**
 * PostHog's default channel rules over `inputs`. Source, medium and campaign are compared lower-cased with
 * empty values as none; a name is looked up as written and then cut to its first significant subdomain
 * (`www.google.co.uk` → `google.co.uk`), the first that gives a type winning, as PostHog's lookup functions do.
 */
export function channelTypeText(inputs: ChannelInputs): string {
  const lowered = (e: string): string => `lower(${nullIfEmpty(e)})`;
  // The lambda's parameters: the codes of the four source lookups, then the inputs as the rules read them.
  const [codes, s, m, c, r, g, hasGclid, hasFbclid] = [
    '__codes',
    '__source',
    '__medium',
    '__campaign',
    '__referrer',
    '__gad_source',
    '__has_gclid',
    '__has_fbclid',
  ];
  const sourceType = (field: 'paid' | 'organic', at: number): string =>
    `coalesce(${classValue(`${codes}[${at}]`, field)}, ${classValue(`${codes}[${at + 1}]`, field)})`;
  const mediumType = (field: 'paid' | 'organic'): string =>
    classValue(lookup(`coalesce(${m}, '')`, CHANNEL_DEFINITIONS.medium), field);
  const rules = `multiIf(
    match(${c}, 'cross-network'), 'Cross Network',
    ${m} IN ('cpc', 'cpm', 'cpv', 'cpa', 'ppc', 'retargeting') OR startsWith(${m}, 'paid') OR ${hasGclid} OR ${g} IS NOT NULL,
    coalesce(
      ${sourceType('paid', 1)},
      if(match(${c}, ${SHOPPING}), 'Paid Shopping', NULL),
      ${mediumType('paid')},
      ${sourceType('paid', 3)},
      multiIf(${g} = '1', 'Paid Search', match(${c}, ${VIDEO}), 'Paid Video', ${hasFbclid}, 'Paid Social', 'Paid Unknown')
    ),
    ${r} = '$direct' AND ${m} IS NULL AND (${s} IS NULL OR ${s} IN ('(direct)', 'direct', '$direct')) AND NOT ${hasFbclid},
    'Direct',
    coalesce(
      ${sourceType('organic', 1)},
      if(match(${c}, ${SHOPPING}), 'Organic Shopping', NULL),
      ${mediumType('organic')},
      ${sourceType('organic', 3)},
      multiIf(
        match(${c}, ${VIDEO}), 'Organic Video',
        match(${m}, 'push$'), 'Push',
        ${hasFbclid}, 'Organic Social',
        ${r} = '$direct', 'Direct',
        ${r} IS NOT NULL, 'Referral',
        'Unknown'
      )
    )
  )`;
  const source = lowered(inputs.source);
  const referrer = inputs.referringDomain;
  const keys = [source, referrer].flatMap((k) => [
    `coalesce(${k}, '')`,
    `cutToFirstSignificantSubdomain(coalesce(${k}, ''))`,
  ]);
  const bound = [
    `arrayMap(__key -> ${lookup('__key', CHANNEL_DEFINITIONS.source)}, ${list(keys)})`,
    source,
    lowered(inputs.medium),
    lowered(inputs.campaign),
    referrer,
    nullIfEmpty(inputs.gadSource),
    inputs.hasGclid,
    inputs.hasFbclid,
  ];
  return `arrayElement(arrayMap((${[codes, s, m, c, r, g, hasGclid, hasFbclid].join(', ')}) -> ${rules}, ${bound.map((b) => `[${b}]`).join(', ')}), 1)`;
}

/**
 * PostHog's referring-domain type (`lookupDomainType`): `$direct` for `$direct`, otherwise the type of the
 * domain as written or cut to its first significant subdomain (Search, Social, Shopping, Video, Email), NULL
 * for a domain not listed.
 */
export function domainTypeText(referringDomain: string): string {
  const typed = `arrayMap(__key -> ${classValue(lookup('__key', CHANNEL_DEFINITIONS.source), 'domainType')}, [coalesce(${referringDomain}, ''), cutToFirstSignificantSubdomain(coalesce(${referringDomain}, ''))])`;
  return `if(${referringDomain} = '$direct', '$direct', arrayFirst(__type -> isNotNull(__type), ${typed}))`;
}

/** HogQL's lookup functions over the channel definitions: which names each reads, and which value of a class. */
const LOOKUPS = {
  lookupDomainType: ['source', 'domainType'],
  lookupPaidSourceType: ['source', 'paid'],
  lookupOrganicSourceType: ['source', 'organic'],
  lookupPaidMediumType: ['medium', 'paid'],
  lookupOrganicMediumType: ['medium', 'organic'],
} as const satisfies Record<string, readonly ['source' | 'medium', keyof ChannelClass]>;

/** The lookup functions by every name HogQL gives them (each also as `hogql_…`). */
export const LOOKUP_FUNCTION_NAMES: readonly string[] = Object.keys(LOOKUPS).flatMap((n) => [
  n,
  `hogql_${n}`,
]);

/**
 * A lookup function as a lambda of one name: its class's value, the name as written first, then cut to its
 * first significant subdomain; NULL when neither is listed. Made when a query first calls it (it carries the
 * definitions' arrays, tens of KB), not when the resolver is loaded.
 */
export function lookupLambdaText(name: string): string {
  const base = name.replace(/^hogql_/, '') as keyof typeof LOOKUPS;
  const [kind, field] = LOOKUPS[base];
  const value = (key: string): string => classValue(lookup(key, CHANNEL_DEFINITIONS[kind]), field);
  return `__name -> coalesce(${value("coalesce(__name, '')")}, ${value("cutToFirstSignificantSubdomain(coalesce(__name, ''))")})`;
}
