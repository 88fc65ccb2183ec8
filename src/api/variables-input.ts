import { AppError } from '../errors/app-error.ts';
import type { JsonObject } from './json-input.ts';

/**
 * `variables` by name (`{"browser": "Chrome"}`), or in PostHog's shape, keyed by variable id with the name in
 * `code_name` (`{"<id>": {"code_name": "browser", "value": "Chrome"}}`). A value is never an object, so an
 * object is PostHog's shape.
 */
export function readVariables(raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AppError('invalid_variable', {
      detail: "'variables' must be an object of values by variable name.",
      attr: 'variables',
    });
  }
  const values: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(raw as JsonObject)) {
    let name = key;
    let value = entry;
    if (typeof entry === 'object' && entry !== null && !Array.isArray(entry)) {
      const posthog = entry as JsonObject;
      if (typeof posthog['code_name'] !== 'string') {
        throw new AppError('invalid_variable', {
          detail: `Variable '${key.slice(0, 64)}': an object must be PostHog's {"code_name": …, "value": …}; a value itself is never an object.`,
          attr: 'variables',
        });
      }
      name = posthog['code_name'];
      value = posthog['isNull'] === true ? null : (posthog['value'] ?? null);
    }
    if (Object.hasOwn(values, name)) {
      throw new AppError('invalid_variable', {
        detail: `Variable '${name}' is given twice.`,
        attr: 'variables',
      });
    }
    values[name] = value;
  }
  return values;
}
