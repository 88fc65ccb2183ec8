/**
 * Capture's acceptance matrix, in the manner of PostHog's capture tests: every path × every body encoding ×
 * every body shape, each case checked by the rows it stores (SPEC §2 "Routes", "Bodies").
 */
import t from 'tap';
import { ENCODINGS, assertError } from '../helpers/capture-bodies.ts';
import { PROJECT_API_KEY, post, startTestWeir } from '../helpers/weir.ts';

const w = await startTestWeir();
t.teardown(() => w.close());

const PATHS = ['/i/v0/e/', '/i/v0/e', '/batch/', '/e/', '/capture/', '/track/', '/engage/'] as const;

/** Non-ASCII text (two-, three- and four-byte UTF-8, a line separator) must survive every encoding intact. */
const TEXT = 'Grüße, 世界 😀 \u2028 + / = & %';

interface Expected {
  readonly event: string;
  readonly distinctId: string;
}

interface Shape {
  readonly name: string;
  /** `object`: a single event; `array`: a JSON array of events; `batch`: a batch object. */
  readonly kind: 'object' | 'array' | 'batch';
  /** The body for case `id`, and the rows it must store. */
  build(id: string): { body: unknown; rows: Expected[] };
}

const props = (id: string, extra: Record<string, unknown> = {}) => ({ case: id, text: TEXT, ...extra });

const SHAPES: readonly Shape[] = [
  {
    name: 'single',
    kind: 'object',
    build: (id) => ({
      body: { api_key: PROJECT_API_KEY, event: 'mx_single', distinct_id: `${id}-a`, properties: props(id) },
      rows: [{ event: 'mx_single', distinctId: `${id}-a` }],
    }),
  },
  {
    name: 'single-token',
    kind: 'object',
    build: (id) => ({
      body: { token: PROJECT_API_KEY, event: 'mx_token', distinct_id: `${id}-a`, properties: props(id) },
      rows: [{ event: 'mx_token', distinctId: `${id}-a` }],
    }),
  },
  {
    // posthog-js puts the key in the event's properties.
    name: 'single-key-in-properties',
    kind: 'object',
    build: (id) => ({
      body: {
        event: '$pageview',
        properties: props(id, { token: PROJECT_API_KEY, distinct_id: `${id}-a`, $current_url: '/x' }),
      },
      rows: [{ event: '$pageview', distinctId: `${id}-a` }],
    }),
  },
  {
    name: 'array',
    kind: 'array',
    build: (id) => ({
      body: [
        { api_key: PROJECT_API_KEY, event: 'mx_array_1', distinct_id: `${id}-a`, properties: props(id) },
        { api_key: PROJECT_API_KEY, event: 'mx_array_2', distinct_id: `${id}-b`, properties: props(id) },
      ],
      rows: [
        { event: 'mx_array_1', distinctId: `${id}-a` },
        { event: 'mx_array_2', distinctId: `${id}-b` },
      ],
    }),
  },
  {
    name: 'array-$token-in-properties',
    kind: 'array',
    build: (id) => ({
      body: [
        { event: 'mx_arr_tok_1', properties: props(id, { $token: PROJECT_API_KEY, distinct_id: `${id}-a` }) },
        { event: 'mx_arr_tok_2', properties: props(id, { $token: PROJECT_API_KEY, distinct_id: `${id}-b` }) },
      ],
      rows: [
        { event: 'mx_arr_tok_1', distinctId: `${id}-a` },
        { event: 'mx_arr_tok_2', distinctId: `${id}-b` },
      ],
    }),
  },
  {
    name: 'batch-distinct-id-in-properties',
    kind: 'batch',
    build: (id) => ({
      body: {
        api_key: PROJECT_API_KEY,
        batch: [
          { event: 'mx_batch_1', properties: props(id, { distinct_id: `${id}-a` }) },
          { event: 'mx_batch_2', properties: props(id, { distinct_id: `${id}-b` }) },
          { event: 'mx_batch_3', properties: props(id, { distinct_id: `${id}-a` }) },
        ],
      },
      rows: [
        { event: 'mx_batch_1', distinctId: `${id}-a` },
        { event: 'mx_batch_2', distinctId: `${id}-b` },
        { event: 'mx_batch_3', distinctId: `${id}-a` },
      ],
    }),
  },
  {
    name: 'batch-distinct-id-on-item',
    kind: 'batch',
    build: (id) => ({
      body: {
        api_key: PROJECT_API_KEY,
        batch: [
          { event: 'mx_item_1', distinct_id: `${id}-a`, properties: props(id) },
          { event: 'mx_item_2', distinct_id: `${id}-b`, properties: props(id) },
        ],
      },
      rows: [
        { event: 'mx_item_1', distinctId: `${id}-a` },
        { event: 'mx_item_2', distinctId: `${id}-b` },
      ],
    }),
  },
  {
    name: 'batch-$token',
    kind: 'batch',
    build: (id) => ({
      body: {
        $token: PROJECT_API_KEY,
        batch: [{ event: 'mx_batch_tok', distinct_id: `${id}-a`, properties: props(id) }],
      },
      rows: [{ event: 'mx_batch_tok', distinctId: `${id}-a` }],
    }),
  },
];

interface StoredRow {
  event: string;
  distinct_id: string;
  case: string;
  text: string;
}

/** The rows whose distinct_id starts with `prefix`, in a stable order. */
async function storedRows(prefix: string): Promise<StoredRow[]> {
  return w.rows<StoredRow>(
    `SELECT event, distinct_id, JSONExtractString(properties, 'case') AS case,
            JSONExtractString(properties, 'text') AS text
     FROM events WHERE startsWith(distinct_id, {prefix:String}) ORDER BY event, distinct_id`,
    { prefix },
  );
}

for (const [p, path] of PATHS.entries()) {
  for (const enc of ENCODINGS) {
    t.test(`POST ${path} as ${enc.name}`, async (t) => {
      const prefix = `mx${p}-${enc.name}-`;
      // The shapes of one path and encoding go in parallel; their rows are told apart by distinct_id.
      const sent = await Promise.all(
        SHAPES.map(async (shape) => {
          const id = `${prefix}${shape.name}`;
          const { body, rows } = shape.build(id);
          const res = await post(
            `${w.url}${path}${enc.query}`,
            enc.encode(JSON.stringify(body)),
            enc.headers,
          );
          return { shape, id, rows, res };
        }),
      );
      const stored = await storedRows(prefix);
      for (const { shape, id, rows, res } of sent) {
        // Each shape's distinct_ids are its id with `-a` or `-b`.
        const mine = stored.filter((r) => r.distinct_id === `${id}-a` || r.distinct_id === `${id}-b`);
        // `/batch/` takes a batch object (an array of events is also read as a batch); a lone event is refused.
        if (path === '/batch/' && shape.kind === 'object') {
          assertError(t, res, 400, 'validation_error', 'empty_batch', shape.name);
          t.same(mine, [], `${shape.name}: nothing stored`);
          continue;
        }
        t.equal(res.status, 200, `${shape.name}: status (${res.text})`);
        t.same(res.json, { status: 'Ok' }, `${shape.name}: body`);
        const wanted = rows
          .map((r) => ({ event: r.event, distinct_id: r.distinctId, case: id, text: TEXT }))
          .sort((a, b) => a.event.localeCompare(b.event) || a.distinct_id.localeCompare(b.distinct_id));
        t.same(mine, wanted, `${shape.name}: stored rows`);
      }
    });
  }
}
