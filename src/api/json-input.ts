import { AppError } from '../errors/app-error.ts';

/**
 * Reading JSON request bodies field by field, with the errors SPEC §1 asks for: `required` for a missing
 * field, `invalid_input` for a wrong one, `unknown_field` for one the route does not take (a typo such
 * as `nmae` is refused rather than silently ignored), each with `attr` naming the field.
 */
export type JsonObject = Readonly<Record<string, unknown>>;

/** The body as an object whose fields are all in `allowed`; an empty body is `{}`. */
export function objectBody(body: unknown, allowed: readonly string[]): JsonObject {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new AppError('invalid_payload', { detail: 'The body must be a JSON object.' });
  }
  for (const field of Object.keys(body)) {
    if (!allowed.includes(field)) {
      throw new AppError('unknown_field', {
        detail: `This route takes no field '${field.slice(0, 64)}'; it takes ${allowed.join(', ')}.`,
        attr: field.slice(0, 64),
      });
    }
  }
  return body as JsonObject;
}

export function isPresent(body: JsonObject, field: string): boolean {
  return body[field] !== undefined && body[field] !== null;
}

export function requirePresent(body: JsonObject, field: string): unknown {
  if (!isPresent(body, field)) {
    throw new AppError('required', { detail: `The field '${field}' is required.`, attr: field });
  }
  return body[field];
}

export function invalid(field: string, detail: string): AppError {
  return new AppError('invalid_input', { detail, attr: field });
}

/** A boolean, or undefined when the field is absent or null. */
export function optionalBoolean(body: JsonObject, field: string): boolean | undefined {
  if (!isPresent(body, field)) return undefined;
  const value = body[field];
  if (typeof value !== 'boolean') throw invalid(field, `'${field}' must be true or false.`);
  return value;
}

/** A required string, trimmed, of 1 to `maxLength` characters. */
export function requiredString(body: JsonObject, field: string, maxLength: number): string {
  const value = requirePresent(body, field);
  if (typeof value !== 'string') throw invalid(field, `The field '${field}' must be a string.`);
  const trimmed = value.trim();
  if (trimmed.length === 0) throw invalid(field, `The field '${field}' may not be blank.`);
  if (trimmed.length > maxLength) {
    throw invalid(field, `The field '${field}' is longer than ${maxLength} characters.`);
  }
  return trimmed;
}
