// The console's views and its router. Views are named by the URL's hash (`#/projects/1/endpoints/dau`,
// `#/projects/1/query`, `#/metrics`), so the browser's back button and a reload keep one's place; the key is
// never part of it.

import { api, ApiError, signIn, signOut, signedIn } from './api.js';
import { fill, h, hashOf, link } from './dom.js';
import { showMetrics } from './metrics.js';
import { renderResult } from './results.js';

const DEFAULT_QUERY =
  'SELECT event, count() AS events\nFROM events\nGROUP BY event\nORDER BY events DESC\nLIMIT 20';
const LAST_QUERY = 'weir.lastQuery';

const app = document.getElementById('app');
/** The projects the key reaches, read at sign-in. */
let projects = [];
/** The project of the last project view, for the links of views without one (metrics). */
let currentProject;
/** Undoes the view shown: stops its timers, destroys its charts. */
let leave = () => {};
/** Bumped on each view shown: an answer that arrives for an older one is dropped. */
let generation = 0;

window.addEventListener('hashchange', () => void show());
void show();

function parseRoute() {
  let parts;
  try {
    parts = location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    return {};
  }
  if (parts[0] === 'metrics') return { view: 'metrics' };
  if (parts[0] !== 'projects' || parts[1] === undefined) return {};
  const project = parts[1];
  if (parts[2] === 'query') return { view: 'query', project };
  if (parts[2] !== 'endpoints') return {};
  const version = parts[4] === 'versions' && /^\d+$/.test(parts[5] ?? '') ? Number(parts[5]) : undefined;
  return { view: 'endpoints', project, name: parts[3], version };
}

async function show() {
  const gen = ++generation;
  leave();
  leave = () => {};
  if (!signedIn()) {
    showSignIn();
    return;
  }
  if (projects.length === 0) {
    try {
      projects = await api.projects();
    } catch (err) {
      if (gen === generation) failed(app, err);
      return;
    }
    if (gen !== generation) return;
  }
  const route = parseRoute();
  if (route.view === undefined) {
    location.replace(hashOf(['projects', currentProject ?? projects[0]?.id ?? 1, 'endpoints']));
    return;
  }
  if (route.project !== undefined) currentProject = route.project;
  const main = shell(route);
  if (projects.length === 0 && route.view !== 'metrics') {
    fill(main, h('p', { class: 'error' }, 'This key reaches no project.'));
    return;
  }
  if (route.project !== undefined && !projects.some((p) => String(p.id) === route.project)) {
    fill(main, h('p', { class: 'error' }, `This key does not reach project ${route.project}.`));
    return;
  }
  const charts = [];
  leave = () => destroy(charts);
  if (route.view === 'metrics') {
    const stop = showMetrics(main);
    leave = stop;
  } else if (route.view === 'query') showQuery(main, route.project, charts);
  else await showEndpoints(main, route, charts, gen);
}

function destroy(charts) {
  for (const chart of charts.splice(0)) chart.destroy();
}

function showSignIn(message) {
  document.title = 'Weir console: sign in';
  const key = h('input', {
    type: 'password',
    name: 'key',
    id: 'key',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'phx_…',
    required: true,
  });
  const error = h('p', { class: 'error', role: 'alert' }, message);
  const button = h('button', { type: 'submit' }, 'Sign in');
  // POST, so that even with scripts off the key would not be sent in a URL.
  const form = h(
    'form',
    { id: 'sign-in', method: 'post', class: 'sign-in' },
    h('h1', null, 'Weir console'),
    h(
      'p',
      null,
      'Sign in with a personal API key (phx_…). It is kept in this tab only (session storage) and sent to this server alone, as a bearer token.',
    ),
    h('label', { for: 'key' }, 'Personal API key'),
    key,
    button,
    error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    fill(error);
    signIn(key.value.trim()).then(
      (list) => {
        projects = list;
        void show();
      },
      (err) => {
        button.disabled = false;
        fill(
          error,
          err instanceof ApiError && err.status === 401
            ? 'This is not a personal API key this server knows (unknown, revoked, or a project key).'
            : err.message,
        );
      },
    );
  });
  fill(app, h('main', { class: 'sign-in-page' }, form));
  key.focus();
}

/** The header (project, views, sign out) and an empty main area for the view. */
function shell(route) {
  document.title = `Weir console: ${route.view}`;
  const project = route.project ?? currentProject ?? String(projects[0]?.id ?? 1);
  const select = h(
    'select',
    { id: 'project', 'aria-label': 'Project' },
    projects.map((p) =>
      h('option', { value: String(p.id), selected: String(p.id) === project }, `${p.name} (#${p.id})`),
    ),
  );
  select.addEventListener('change', () => {
    location.hash = hashOf(['projects', select.value, route.view === 'query' ? 'query' : 'endpoints']);
  });
  const nav = (segments, text, view) =>
    link(segments, text, { class: route.view === view ? 'active' : undefined, id: `nav-${view}` });
  const out = h(
    'button',
    {
      type: 'button',
      id: 'sign-out',
      onclick: () => {
        signOut();
        projects = [];
        void show();
      },
    },
    'Sign out',
  );
  const main = h('main', { id: 'view' });
  fill(
    app,
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Weir'),
      select,
      h(
        'nav',
        null,
        nav(['projects', project, 'endpoints'], 'Endpoints', 'endpoints'),
        nav(['projects', project, 'query'], 'Query', 'query'),
        nav(['metrics'], 'Metrics', 'metrics'),
      ),
      out,
    ),
    main,
  );
  return main;
}

/** An error in `parent`; a refused key signs out. */
function failed(parent, err) {
  if (err instanceof ApiError && err.status === 401) {
    signOut();
    projects = [];
    showSignIn('The server refused the key (revoked or unknown): sign in again.');
    return;
  }
  fill(parent, errorBox(err));
}

function errorBox(err) {
  const code = err instanceof ApiError ? `${err.code}${err.attr ? ` (${err.attr})` : ''}: ` : '';
  return h('p', { class: 'error', role: 'alert' }, `${code}${err.message}`);
}

async function showEndpoints(main, route, charts, gen) {
  const list = h('nav', { class: 'endpoint-list', id: 'endpoints' }, h('p', { class: 'note' }, 'Loading…'));
  const detail = h('section', { class: 'detail', id: 'endpoint' });
  fill(main, h('div', { class: 'split' }, list, detail));
  let endpoints;
  try {
    endpoints = await api.endpoints(route.project);
  } catch (err) {
    if (gen === generation) failed(list, err);
    return;
  }
  if (gen !== generation) return;
  fill(
    list,
    h('h2', null, 'Endpoints'),
    endpoints.length === 0
      ? h('p', { class: 'note' }, 'No endpoints in this project yet (POST …/endpoints/, docs/endpoints.md).')
      : h(
          'ul',
          null,
          endpoints.map((e) =>
            h(
              'li',
              { class: e.name === route.name ? 'active' : undefined },
              link(['projects', route.project, 'endpoints', e.name], e.name, {
                dataset: { endpoint: e.name },
              }),
              h('span', { class: 'kind' }, kindLabel(e.query?.kind), ` · v${e.current_version}`),
              e.is_active ? null : h('span', { class: 'badge' }, 'inactive'),
            ),
          ),
        ),
  );
  if (route.name === undefined) {
    fill(
      detail,
      h('p', { class: 'note' }, 'Pick an endpoint to see its query, its OpenAPI description and run it.'),
    );
    return;
  }
  fill(detail, h('p', { class: 'note' }, 'Loading…'));
  let endpoint, versions, openapi;
  try {
    [endpoint, versions, openapi] = await Promise.all([
      api.endpoint(route.project, route.name, route.version),
      api.versions(route.project, route.name),
      api.openapi(route.project, route.name, route.version).catch((err) => err),
    ]);
  } catch (err) {
    if (gen === generation) failed(detail, err);
    return;
  }
  if (gen !== generation) return;
  showEndpoint(detail, route, endpoint, versions, openapi, charts);
}

function kindLabel(kind) {
  return (
    { HogQLQuery: 'SQL', TrendsQuery: 'Trends', FunnelsQuery: 'Funnel', RetentionQuery: 'Retention' }[kind] ??
    'query'
  );
}

function showEndpoint(detail, route, endpoint, versions, openapi, charts) {
  const shown = route.version ?? endpoint.current_version;
  const versionSelect = h(
    'select',
    { id: 'version', 'aria-label': 'Version' },
    versions.map((v) =>
      h(
        'option',
        { value: String(v.version), selected: v.version === shown },
        `v${v.version}${v.version === endpoint.current_version ? ' (newest)' : ''}${v.is_active ? '' : ' (inactive)'}`,
      ),
    ),
  );
  versionSelect.addEventListener('change', () => {
    const n = Number(versionSelect.value);
    const base = ['projects', route.project, 'endpoints', endpoint.name];
    location.hash = hashOf(n === endpoint.current_version ? base : [...base, 'versions', n]);
  });
  const query = endpoint.query;
  const materialization = endpoint.materialization ?? {};
  fill(
    detail,
    h('h2', { id: 'endpoint-name' }, endpoint.name),
    endpoint.description ? h('p', { class: 'description' }, endpoint.description) : null,
    h(
      'dl',
      { class: 'facts' },
      fact('Kind', kindLabel(query.kind)),
      fact('Version', versionSelect),
      fact('Active', endpoint.is_active ? 'yes' : 'no'),
      fact(
        'Materialized',
        endpoint.is_materialized
          ? `${materialization.status}${materialization.last_materialized_at ? ` at ${materialization.last_materialized_at}` : ''}`
          : 'no',
      ),
      fact('Cache', `${endpoint.cache_age_seconds} s`),
      fact('Updated', endpoint.updated_at),
    ),
    h('h3', null, query.kind === 'HogQLQuery' ? 'SQL' : 'Insight query'),
    h(
      'pre',
      { class: 'code', id: 'endpoint-query' },
      query.kind === 'HogQLQuery' ? query.query : JSON.stringify(query, null, 2),
    ),
    h(
      'details',
      { class: 'openapi' },
      h('summary', null, 'OpenAPI description (openapi.json)'),
      openapi instanceof Error
        ? errorBox(openapi)
        : h('pre', { class: 'code', id: 'endpoint-openapi' }, JSON.stringify(openapi, null, 2)),
    ),
    runForm(route, endpoint, openapi, charts),
  );
}

function fact(term, value) {
  return [h('dt', null, term), h('dd', null, value)];
}

/** The variables a run takes, from the OpenAPI description (or, without one, the declared types). */
function runVariables(endpoint, openapi) {
  const schema = openapi instanceof Error ? undefined : openapi?.components?.schemas?.EndpointRunRequest;
  const variables = schema?.properties?.variables;
  if (variables?.properties) {
    const required = new Set(variables.required ?? []);
    return Object.entries(variables.properties).map(([name, s]) => ({
      name,
      schema: s,
      required: required.has(name),
    }));
  }
  return Object.entries(endpoint.variables ?? {}).map(([name, d]) => ({
    name,
    schema: {
      type: d.type === 'list' ? 'array' : d.type === 'date' ? 'string' : d.type,
      format: d.type === 'date' ? 'date' : undefined,
    },
    required: endpoint.query?.kind === 'HogQLQuery',
  }));
}

function runForm(route, endpoint, openapi, charts) {
  const variables = runVariables(endpoint, openapi);
  const fields = variables.map(variableField);
  const refresh = h(
    'select',
    { name: 'refresh', id: 'refresh' },
    ['cache', 'force', 'direct'].map((r) => h('option', { value: r }, r)),
  );
  const debug = h('input', { type: 'checkbox', name: 'debug', id: 'debug' });
  // A SQL endpoint's answer comes in pages; an insight answers its whole table.
  const paged = endpoint.query.kind === 'HogQLQuery';
  const page = paged
    ? ['limit', 'offset'].map((name) =>
        h('input', { type: 'number', min: '0', step: '1', id: name, class: 'short' }),
      )
    : [];
  const button = h('button', { type: 'submit', id: 'run' }, 'Run');
  const area = h('div', { class: 'result-area', id: 'result' });
  const form = h(
    'form',
    { class: 'run', id: 'run-form' },
    h('h3', null, 'Run'),
    fields.length === 0
      ? h('p', { class: 'note' }, 'No variables.')
      : h(
          'div',
          { class: 'variables' },
          fields.map((f) => f.label),
        ),
    h(
      'div',
      { class: 'options' },
      h('label', null, 'refresh ', refresh),
      h('label', null, debug, ' debug (the query as it ran)'),
      page.map((input) => h('label', null, `${input.id} `, input)),
      button,
    ),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const body = { refresh: refresh.value };
    if (debug.checked) body.debug = true;
    if (route.version !== undefined) body.version = route.version;
    for (const input of page) if (input.value !== '') body[input.id] = Number(input.value);
    try {
      const values = {};
      for (const f of fields) {
        const value = f.read();
        if (value !== undefined) values[f.name] = value;
      }
      if (Object.keys(values).length > 0) body.variables = values;
    } catch (err) {
      fill(area, errorBox(err));
      return;
    }
    button.disabled = true;
    destroy(charts);
    fill(area, h('p', { class: 'note' }, 'Running…'));
    const started = performance.now();
    api.run(route.project, endpoint.name, body).then(
      (result) => {
        button.disabled = false;
        const ms = performance.now() - started;
        fill(area, h('p', { class: 'meta', id: 'result-meta' }, runMeta(result, ms)));
        renderResult(area, result, endpoint.query.kind, charts);
      },
      (err) => {
        button.disabled = false;
        failed(area, err);
      },
    );
  });
  return [form, area];
}

function runMeta(result, ms) {
  const parts = [`${result.results.length} row${result.results.length === 1 ? '' : 's'}`];
  if (result.hasMore) parts.push('more rows exist');
  parts.push(`version ${result.endpoint_version}`);
  parts.push(result.is_cached ? `from the cache (computed ${result.last_refresh})` : 'computed now');
  if (result.endpoint_materialized)
    parts.push(`from the materialization of ${result.endpoint_materialized_at}`);
  parts.push(`${ms.toFixed(0)} ms`);
  return parts.join(' · ');
}

/** One variable's input, and how its text becomes the JSON value sent; empty means not sent. */
function variableField({ name, schema, required }) {
  const type = schema?.type;
  const id = `var-${name}`;
  let input;
  if (type === 'boolean') {
    input = h(
      'select',
      { id },
      ['', 'true', 'false'].map((v) => h('option', { value: v }, v)),
    );
  } else if (type === 'number' || type === 'integer') {
    input = h('input', { id, type: 'number', step: 'any' });
  } else if (type === 'string' && schema.format === 'date') {
    input = h('input', { id, type: 'date' });
  } else {
    const placeholder =
      type === 'array'
        ? '["a", "b"] (JSON)'
        : schema?.format === 'date-time'
          ? '2026-01-31T12:00:00Z'
          : type === undefined
            ? 'text, or a JSON value'
            : schema?.nullable
              ? 'all; null: none'
              : '';
    input = h('input', { id, type: 'text', placeholder, spellcheck: 'false' });
  }
  input.dataset.variable = name;
  const read = () => {
    const raw = input.value;
    if (raw === '') return undefined;
    if (schema?.nullable && raw === 'null') return null;
    if (type === 'boolean') return raw === 'true';
    if (type === 'number' || type === 'integer') return Number(raw);
    if (type === 'array') {
      let value;
      try {
        value = JSON.parse(raw);
      } catch {
        value = undefined;
      }
      if (!Array.isArray(value)) throw new Error(`${name}: write a JSON list, like ["a", "b"].`);
      return value;
    }
    if (type === undefined) {
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
    }
    return raw;
  };
  const label = h(
    'label',
    { class: 'variable', for: id, title: schema?.description },
    h('span', { class: 'name' }, name, required ? ' *' : ''),
    input,
  );
  return { name, label, read };
}

function showQuery(main, project, charts) {
  const sql = h('textarea', {
    id: 'sql',
    name: 'sql',
    rows: '8',
    spellcheck: 'false',
    'aria-label': 'SQL',
    value: sessionStorage.getItem(LAST_QUERY) ?? DEFAULT_QUERY,
  });
  const button = h('button', { type: 'submit', id: 'run-query' }, 'Run');
  const area = h('div', { class: 'result-area', id: 'result' });
  const form = h(
    'form',
    { class: 'query', id: 'query-form' },
    h('h2', null, 'Query'),
    h(
      'p',
      { class: 'note' },
      'SQL in Weir’s dialect (PostHog’s HogQL) over this project’s events, persons, groups and sessions. Ctrl+Enter runs it.',
    ),
    sql,
    h('div', { class: 'options' }, button),
  );
  sql.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(LAST_QUERY, sql.value);
    button.disabled = true;
    destroy(charts);
    fill(area, h('p', { class: 'note' }, 'Running…'));
    const started = performance.now();
    api.query(project, sql.value).then(
      (result) => {
        button.disabled = false;
        const ms = performance.now() - started;
        const rows = result.results.length;
        fill(
          area,
          h(
            'p',
            { class: 'meta', id: 'result-meta' },
            `${rows} row${rows === 1 ? '' : 's'} · ${ms.toFixed(0)} ms`,
          ),
        );
        renderResult(area, result, 'HogQLQuery', charts);
      },
      (err) => {
        button.disabled = false;
        failed(area, err);
      },
    );
  });
  fill(main, form, area);
}
