/**
 * Whether `value`'s JSON text (as JSON.stringify writes it, in UTF-8) is at most `limit` bytes. Most values
 * are far under any limit, so a cheap upper bound is summed first and the text is written and measured only
 * when the bound passes the limit: in a large batch every event is checked, and writing each one out again
 * was the largest single cost of taking such a batch.
 */
export function jsonFitsIn(value: unknown, limit: number): boolean {
  if (boundedSize(value, limit) <= limit) return true;
  const text = JSON.stringify(value) as string | undefined;
  return text === undefined || Buffer.byteLength(text) <= limit;
}

/**
 * An upper bound of the JSON text's UTF-8 bytes, summed until it passes `budget`. A string's UTF-16 unit is
 * at most 6 bytes written (`\uXXXX`); a number at most 25 characters. The value comes from JSON.parse, so it
 * holds no cycles and its depth is already bounded by the request's decoding.
 */
function boundedSize(value: unknown, budget: number): number {
  switch (typeof value) {
    case 'string':
      return value.length * 6 + 2;
    case 'number':
      return 25;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      let size = 2;
      if (Array.isArray(value)) {
        for (const v of value) {
          size += boundedSize(v, budget - size) + 1;
          if (size > budget) return size;
        }
        return size;
      }
      for (const key in value) {
        size += key.length * 6 + 4 + boundedSize((value as Record<string, unknown>)[key], budget - size);
        if (size > budget) return size;
      }
      return size;
    }
    default:
      return 4;
  }
}
