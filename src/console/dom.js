// Elements built from data as text nodes and properties, never as markup: a project name, a query or a cell
// such as `<img src=x onerror=…>` is shown as the text it is. Nothing in the console uses innerHTML.

/** Properties set as properties (a textarea's value is not an attribute). */
const PROPERTIES = new Set(['value', 'checked']);

/**
 * `h('a', { href: '#/metrics', class: 'nav', onclick: f }, 'Metrics', …)`: attributes, `on…` listeners and
 * children (strings become text nodes; null, undefined and false are skipped; arrays are flattened).
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value);
      else if (name === 'class') el.className = value;
      else if (name === 'dataset') Object.assign(el.dataset, value);
      else if (PROPERTIES.has(name)) el[name] = value;
      else if (name.startsWith('on')) throw new Error(`listener ${name} is not a function`);
      else el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces what `el` holds with `children`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A hash link inside the console; every path segment is encoded, so a name cannot leave its segment. */
export function link(segments, text, props = {}) {
  return h('a', { ...props, href: hashOf(segments) }, text);
}

export function hashOf(segments) {
  return `#/${segments.map((s) => encodeURIComponent(String(s))).join('/')}`;
}

const NUMBER = new Intl.NumberFormat('en', { maximumFractionDigits: 2 });

export function formatNumber(n) {
  return Number.isFinite(n) ? NUMBER.format(n) : String(n);
}

export function formatBytes(n) {
  if (!Number.isFinite(n)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}
