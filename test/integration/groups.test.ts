/**
 * Groups (SPEC §2 "Event semantics"): `$groupidentify` and `$groups`, real HTTP in, real chDB rows out.
 * The group type mapping is per project and every test here shares the one project, so each test uses
 * type names of its own and the limit test counts what the others left.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

type Props = Record<string, unknown>;
const uid = (name: string): string => `${name}-${randomUUID().slice(0, 8)}`;

async function send(events: { event: string; distinct_id: string; properties: Props }[]): Promise<void> {
  const res = await post(`${w.url}/batch/`, JSON.stringify({ api_key: PROJECT_API_KEY, batch: events }));
  if (res.status !== 200) throw new Error(`capture answered ${res.status}: ${res.text}`);
}

const groupIdentify = (type: string, key: string, set: Props) => ({
  event: '$groupidentify',
  distinct_id: uid('admin'),
  properties: { $group_type: type, $group_key: key, $group_set: set },
});

async function groupRow(
  type: string,
  key: string,
): Promise<{ index: number; properties: Props } | undefined> {
  const [row] = await w.rows<{ group_type_index: number; properties: string }>(
    `SELECT group_type_index, properties FROM groups FINAL WHERE group_type = {t:String} AND group_key = {k:String}`,
    { t: type, k: key },
  );
  return row && { index: row.group_type_index, properties: JSON.parse(row.properties) as Props };
}

async function typeIndex(type: string): Promise<number | undefined> {
  const [row] = await w.rows<{ i: number }>(
    `SELECT group_type_index AS i FROM group_type_mapping FINAL WHERE group_type = {t:String}`,
    { t: type },
  );
  return row?.i;
}

t.test('$groupidentify creates a group and merges $group_set one level deep', async (t) => {
  const type = uid('company');
  await send([
    groupIdentify(type, 'acme', { name: 'Acme', plan: 'free', address: { city: 'Oslo', zip: '1' } }),
  ]);
  const created = await groupRow(type, 'acme');
  t.ok(created, 'the group exists');
  t.equal(created?.index, await typeIndex(type), 'under the index its type was mapped to');
  t.same(created?.properties, { name: 'Acme', plan: 'free', address: { city: 'Oslo', zip: '1' } });

  await send([groupIdentify(type, 'acme', { plan: 'paid', address: { city: 'Bergen' } })]);
  t.same(
    (await groupRow(type, 'acme'))?.properties,
    {
      name: 'Acme',
      plan: 'paid',
      address: { city: 'Bergen' },
    },
    'named keys replaced (a nested object whole), others kept',
  );

  const [event] = await w.rows<{ n: string }>(
    `SELECT count() AS n FROM events WHERE event = '$groupidentify' AND JSONExtractString(properties, '$group_type') = {t:String}`,
    { t: type },
  );
  t.equal(Number(event?.n), 2, 'the $groupidentify events are stored');
});

t.test('$groups fills the $group_N columns and maps new types without making groups', async (t) => {
  const type = uid('team');
  const d = uid('member');
  await send([{ event: 'click', distinct_id: d, properties: { $groups: { [type]: 'blue' } } }]);
  const index = await typeIndex(type);
  t.type(index, 'number', 'the new type got an index');
  const [row] = await w.rows<Record<string, string>>(
    `SELECT $group_0, $group_1, $group_2, $group_3, $group_4 FROM events WHERE distinct_id = {d:String}`,
    { d },
  );
  t.equal(row?.[`$group_${index}`], 'blue');
  t.equal(await groupRow(type, 'blue'), undefined, 'no group is made by $groups');

  // An identified group and a personless event: groups link regardless of person processing.
  await send([
    groupIdentify(type, 'red', { size: 3 }),
    {
      event: 'click',
      distinct_id: d,
      properties: { $process_person_profile: false, $groups: { [type]: 'red' } },
    },
  ]);
  const rows = await w.rows<{ g: string }>(
    `SELECT \`$group_${index}\` AS g FROM events WHERE distinct_id = {d:String} ORDER BY timestamp`,
    { d },
  );
  t.same(
    rows.map((r) => r.g),
    ['blue', 'red'],
  );
});

t.test('a sixth group type is refused with a warning', async (t) => {
  const [taken] = await w.rows<{ n: string }>(`SELECT count() AS n FROM group_type_mapping FINAL`);
  const free = 5 - Number(taken?.n);
  t.ok(free >= 1, 'the earlier tests left room');
  const fill = Array.from({ length: free }, () => uid('fill'));
  await send(fill.map((type) => groupIdentify(type, 'k', {})));
  for (const type of fill) t.type(await typeIndex(type), 'number');
  const [all] = await w.rows<{ indexes: number[] }>(
    `SELECT arraySort(groupArray(group_type_index)) AS indexes FROM group_type_mapping FINAL`,
  );
  t.same(all?.indexes, [0, 1, 2, 3, 4], 'five types take indexes 0..4');

  const sixth = uid('sixth');
  await send([groupIdentify(sixth, 'k', { a: 1 })]);
  t.equal(await typeIndex(sixth), undefined, 'no index for the sixth type');
  t.equal(await groupRow(sixth, 'k'), undefined, 'and no group');
  const warnings = await w.rows<{ details: string }>(
    `SELECT details FROM ingestion_warnings WHERE type = 'group_type_limit_reached' AND position(details, {t:String}) > 0`,
    { t: sixth },
  );
  t.equal(warnings.length, 1);
  t.match(JSON.parse(warnings[0]!.details), { groupType: sixth, event: '$groupidentify' });

  // On ordinary events the refused type is left out of the columns; the known ones still link.
  const d = uid('limited');
  const other = uid('seventh');
  await send([
    { event: 'a', distinct_id: d, properties: { $groups: { [fill[0]!]: 'x', [other]: 'y' } } },
    { event: 'b', distinct_id: d, properties: { $groups: { [other]: 'z' } } },
  ]);
  const index = await typeIndex(fill[0]!);
  const [row] = await w.rows<Record<string, string>>(
    `SELECT $group_0, $group_1, $group_2, $group_3, $group_4 FROM events WHERE distinct_id = {d:String} AND event = 'a'`,
    { d },
  );
  t.equal(row?.[`$group_${index}`], 'x');
  t.notOk(Object.values(row ?? {}).includes('y'));
  const ordinary = await w.rows<{ details: string }>(
    `SELECT details FROM ingestion_warnings WHERE type = 'group_type_limit_reached' AND position(details, {t:String}) > 0`,
    { t: other },
  );
  t.equal(ordinary.length, 1, 'ordinary events warn once per type, not once per event');
});
