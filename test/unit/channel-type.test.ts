/**
 * PostHog's channel classification (src/query/resolver/channel-type.ts) on the engine: every case of PostHog's
 * channel-type tests (test/helpers/posthog-channel-cases.ts), its inputs read as PostHog's person fields and
 * its sessions read them, through the resolver and the ClickHouse printer, run in chDB. The definitions file
 * is checked against what PostHog's definitions say of a few names, and refused when it is malformed.
 */
import { query } from 'chdb';
import t from 'tap';
import { printClickHouse } from '../../src/query/clickhouse/printer.ts';
import { bindVariables } from '../../src/query/clickhouse/variables.ts';
import { parseDialect, quoteString } from '../../src/query/dialect/mod.ts';
import {
  CHANNEL_DEFINITIONS,
  channelTypeText,
  domainTypeText,
  nullIfEmpty,
  parseChannelDefinitions,
  type ChannelInputs,
} from '../../src/query/resolver/channel-type.ts';
import { resolveQuery } from '../../src/query/resolver/resolver.ts';
import {
  DOMAIN_TYPE_CASES,
  PERSON_CASES,
  SESSION_CASES,
  WILD_CLICKS,
  wildClickProperties,
} from '../helpers/posthog-channel-cases.ts';

/** The inputs of one case, as the text PostHog's field reads (NULL for a missing property). */
interface Row {
  readonly source: unknown;
  readonly medium: unknown;
  readonly campaign: unknown;
  readonly referringDomain: unknown;
  readonly gadSource: unknown;
  readonly gclid: unknown;
  readonly fbclid: unknown;
}

/** A person's `$initial_…` properties as `$virt_initial_channel_type` reads them. */
const personRow = (p: Readonly<Record<string, unknown>>): Row => ({
  source: p['$initial_utm_source'],
  medium: p['$initial_utm_medium'],
  campaign: p['$initial_utm_campaign'],
  referringDomain: p['$initial_referring_domain'],
  gadSource: p['$initial_gad_source'],
  gclid: p['$initial_gclid'],
  fbclid: p['$initial_fbclid'],
});

/** A session's entry `$pageview` properties as `$channel_type` reads them. */
const sessionRow = (p: Readonly<Record<string, unknown>>): Row => ({
  source: p['utm_source'],
  medium: p['utm_medium'],
  campaign: p['utm_campaign'],
  referringDomain: p['$referring_domain'],
  gadSource: p['gad_source'],
  gclid: p['gclid'],
  fbclid: p['fbclid'],
});

/** A value as the engine reads a property's text: a string as it is, a number as written; NULL when missing. */
const text = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number'
    ? `toNullable(${quoteString(String(v))})`
    : "CAST(NULL, 'Nullable(String)')";

/** How a field reads the row's columns: a person's as PostHog's persons table does, a session's as its sessions. */
const PERSON_READ: ChannelInputs = {
  source: 't.source',
  medium: 't.medium',
  campaign: 't.campaign',
  referringDomain: 't.referring_domain',
  gadSource: 't.gad_source',
  hasGclid: `isNotNull(${nullIfEmpty('t.gclid')})`,
  hasFbclid: `isNotNull(${nullIfEmpty('t.fbclid')})`,
};
const SESSION_READ: ChannelInputs = { ...PERSON_READ, referringDomain: nullIfEmpty('t.referring_domain') };

/** Runs `expr` over the rows (columns of `t`), through the resolver and printer, and gives its value per row. */
function classify(rows: readonly Row[], expr: string): string[] {
  const members = rows.map(
    (r, i) =>
      `SELECT ${i} AS i, ${text(r.source)} AS source, ${text(r.medium)} AS medium, ${text(r.campaign)} AS campaign, ${text(r.referringDomain)} AS referring_domain, ${text(r.gadSource)} AS gad_source, ${text(r.gclid)} AS gclid, ${text(r.fbclid)} AS fbclid`,
  );
  const resolved = resolveQuery(
    parseDialect(`SELECT t.i, ${expr} AS value FROM (${members.join(' UNION ALL ')}) AS t ORDER BY t.i`),
  );
  const printed = printClickHouse(resolved, bindVariables(resolved.variables, {}), 1);
  const out = JSON.parse(query(printed.sql, 'JSONCompact')) as { data: [number, string | null][] };
  return out.data.map((row) => row[1] as string);
}

t.test('the definitions are PostHog’s', (t) => {
  const { classes, medium, source } = CHANNEL_DEFINITIONS;
  t.equal(source.size, 1493, 'sources and referring domains');
  t.equal(medium.size, 26, 'utm_medium values');
  const of = (map: ReadonlyMap<string, number>, name: string) => classes[map.get(name)! - 1];
  t.same(of(source, 'google'), { domainType: 'Search', paid: 'Paid Search', organic: 'Organic Search' });
  t.same(of(source, 'mail.google.com'), { domainType: 'Email', paid: null, organic: 'Email' });
  t.same(of(source, 'sms'), { domainType: null, paid: null, organic: 'SMS' });
  t.same(of(source, 'firebase'), { domainType: null, paid: null, organic: 'Push' });
  t.same(of(source, 'zooppa.com'), { domainType: 'Social', paid: 'Paid Social', organic: 'Organic Social' });
  t.same(of(medium, 'cpm'), { domainType: null, paid: 'Display', organic: 'Display' });
  t.same(of(medium, 'social media'), { domainType: null, paid: 'Paid Social', organic: 'Organic Social' });
  t.same(of(medium, 'audio'), { domainType: null, paid: null, organic: 'Audio' });
  t.notOk(source.has('ycombinator.com'), 'only the subdomain is listed, as PostHog’s test says');
  t.end();
});

t.test('a malformed definitions file is refused with its line', (t) => {
  t.throws(() => parseChannelDefinitions('= S Search|-|Organic Search\nS google'), {
    message:
      'channel definitions, line 2: a row is `<class letter> <name>` under @medium or @source: S google',
  });
  t.throws(() => parseChannelDefinitions('= S Search|-\n'), { message: /line 1: a class is/ });
  t.throws(() => parseChannelDefinitions('= S a|b|c\n@source\nX google'), { message: /line 3: a row is/ });
  t.throws(() => parseChannelDefinitions('= S a|b|c\n@source\nS google\nS google'), {
    message: 'channel definitions, line 4: the name is listed twice: S google',
  });
  t.end();
});

t.test('PostHog’s person cases: $virt_initial_channel_type', (t) => {
  const got = classify(
    PERSON_CASES.map((c) => personRow(c.properties)),
    channelTypeText(PERSON_READ),
  );
  PERSON_CASES.forEach((c, i) => t.equal(got[i], c.expected, c.name));
  t.end();
});

t.test('PostHog’s session cases: $channel_type', (t) => {
  const got = classify(
    SESSION_CASES.map((c) => sessionRow(c.properties)),
    channelTypeText(SESSION_READ),
  );
  SESSION_CASES.forEach((c, i) => t.equal(got[i], c.expected, c.name));
  t.end();
});

t.test('PostHog’s wild clicks: the same channel for the session and the person', (t) => {
  const clicks = WILD_CLICKS.map(([, url, referrer]) => wildClickProperties(url, referrer));
  const sessions = classify(
    clicks.map((c) => sessionRow(c.event)),
    channelTypeText(SESSION_READ),
  );
  const persons = classify(
    clicks.map((c) => personRow(c.person)),
    channelTypeText(PERSON_READ),
  );
  WILD_CLICKS.forEach(([name, , , expected], i) => {
    t.equal(sessions[i], expected, `${name} (session)`);
    t.equal(persons[i], expected, `${name} (person)`);
  });
  t.end();
});

t.test('PostHog’s referring domain types: $virt_initial_referring_domain_type', (t) => {
  const got = classify(
    DOMAIN_TYPE_CASES.map(([domain]) => personRow({ $initial_referring_domain: domain })),
    domainTypeText('t.referring_domain'),
  );
  DOMAIN_TYPE_CASES.forEach(([domain, expected], i) => t.equal(got[i], expected, domain));
  t.same(
    classify(
      [personRow({}), personRow({ $initial_referring_domain: 'example.com' })],
      domainTypeText('t.referring_domain'),
    ),
    [null, null],
    'no referring domain, or one not listed, has no type',
  );
  t.end();
});

t.test('the rules’ corners: case, cut subdomains, medium lookups, empty values', (t) => {
  const row = (r: Partial<Row>): Row => ({
    source: null,
    medium: null,
    campaign: null,
    referringDomain: null,
    gadSource: null,
    gclid: null,
    fbclid: null,
    ...r,
  });
  const cases: [Partial<Row>, string][] = [
    // A source is compared lower-cased; a referring domain as written (PostHog lower-cases utm values only).
    [{ source: 'GOOGLE', referringDomain: 'x.io' }, 'Organic Search'],
    [{ referringDomain: 'WWW.GOOGLE.COM' }, 'Referral'],
    // Cut to the first significant subdomain when the name itself is not listed.
    [{ referringDomain: 'images.google.de' }, 'Organic Search'],
    // mail.google.com is listed (Email, no paid type): a paid visit from it falls back to google.com's.
    [{ referringDomain: 'mail.google.com', medium: 'cpc' }, 'Paid Search'],
    [{ referringDomain: 'mail.google.com' }, 'Email'],
    // Media from PostHog's medium definitions.
    [{ medium: 'display', referringDomain: '$direct' }, 'Display'],
    [{ medium: 'cpm' }, 'Display'],
    [{ medium: 'audio', referringDomain: '$direct' }, 'Audio'],
    [{ source: 'sms', referringDomain: '$direct' }, 'SMS'],
    [{ medium: 'web-push' }, 'Push'],
    [{ medium: 'paid_social', source: 'tiktok' }, 'Paid Social'],
    [{ medium: 'paid', campaign: 'summer-video-ads' }, 'Paid Video'],
    [{ medium: 'paid', campaign: 'winter-shop' }, 'Paid Shopping'],
    [{ medium: 'paid', fbclid: 'x' }, 'Paid Social'],
    [{ gadSource: '1' }, 'Paid Search'],
    [{ gadSource: '5' }, 'Paid Unknown'],
    [{ campaign: 'my-video', referringDomain: '$direct', source: 'newsletter' }, 'Organic Video'],
    [{ source: 'direct', referringDomain: '$direct' }, 'Direct'],
    [{ source: '(direct)', referringDomain: '$direct' }, 'Direct'],
    [{ referringDomain: '$direct', fbclid: 'x' }, 'Organic Social'],
  ];
  const got = classify(
    cases.map(([r]) => row(r)),
    channelTypeText(SESSION_READ),
  );
  cases.forEach(([r, expected], i) => t.equal(got[i], expected, JSON.stringify(r)));
  t.end();
});

t.test('a classification prints its domain list once', (t) => {
  const printed = channelTypeText(PERSON_READ);
  t.equal(printed.split("'zooppa.com'").length - 1, 1);
  t.ok(printed.length < 40_000, `${printed.length} characters of the 256 KiB a query may print`);
  t.end();
});
