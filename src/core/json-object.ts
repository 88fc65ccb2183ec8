/** The JSON object a stored text holds (properties), or `{}` for anything else: a bad row reads as empty. */
export function parseJsonObject(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
