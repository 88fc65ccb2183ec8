import type { ApiRequest } from './api-route.ts';
import { invalid } from './json-input.ts';

/** A whole-number query parameter from `min` to `max`, or `fallback` when it is absent or empty (400 otherwise). */
export function integerParam(
  req: ApiRequest,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = req.query.get(name);
  if (raw === null || raw === '') return fallback;
  if (!/^\d{1,16}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw invalid(name, `'${name}' must be a whole number from ${min} to ${max}.`);
  }
  return Number(raw);
}
