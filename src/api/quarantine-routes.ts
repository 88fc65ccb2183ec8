import type { HttpApp } from '../http/transport.ts';
import type { Logger } from '../core/logger.ts';
import type { Catalog, QuarantinedRow, QuarantineStore } from '../core/ports.ts';
import type { InFlight } from '../http/in-flight.ts';
import { apiRoute, type ApiRequest } from './api-route.ts';
import { projectWithScope } from './auth.ts';
import { invalid, isPresent, objectBody } from './json-input.ts';
import { integerParam } from './query-params.ts';

export interface QuarantineRoutesDeps {
  readonly catalog: Catalog;
  readonly quarantine: QuarantineStore;
  readonly inFlight: InFlight;
  readonly logger: Logger;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;
const MAX_IDS = 1000;

/**
 * The project's rows the store refused and set aside (docs/quarantine.md): `GET P/quarantine/` lists them
 * (`query:read`: they are the project's events, as the query API reads them), and
 * `POST P/quarantine/replay/` inserts the held ones again (`project:write`), all or those of `ids`.
 */
export function registerQuarantineRoutes(app: HttpApp, deps: QuarantineRoutesDeps): void {
  for (const base of ['/api/projects/:id/quarantine/', '/api/environments/:id/quarantine/']) {
    apiRoute(app, deps, base, {
      get: async (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'query:read');
        const rows = await deps.quarantine.listQuarantined({
          projectId,
          status: statusParam(req),
          limit: integerParam(req, 'limit', DEFAULT_LIMIT, 1, MAX_LIMIT),
          offset: integerParam(req, 'offset', 0, 0, Number.MAX_SAFE_INTEGER),
        });
        return { status: 200, body: { results: rows.map(rowJson) } };
      },
    });
    apiRoute(app, deps, `${base}replay/`, {
      post: async (req) => {
        const projectId = projectWithScope(deps.catalog, req.authorization, req.params[0]!, 'project:write');
        const body = req.body === undefined ? {} : objectBody(req.body, ['ids']);
        const ids = isPresent(body, 'ids') ? idsOf(body['ids']) : undefined;
        const results = await deps.quarantine.replayQuarantined({ projectId, ids });
        return {
          status: 200,
          body: {
            results,
            stored: results.filter((r) => r.result === 'stored').length,
            refused: results.filter((r) => r.result === 'refused').length,
          },
        };
      },
    });
  }
}

function statusParam(req: ApiRequest): 'held' | 'replayed' | undefined {
  const status = req.query.get('status');
  if (status === null || status === '') return undefined;
  if (status !== 'held' && status !== 'replayed') throw invalid('status', `'status' is held or replayed.`);
  return status;
}

function idsOf(value: unknown): string[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_IDS ||
    !value.every((id) => typeof id === 'string' && /^[0-9a-f]{32}$/.test(id))
  ) {
    throw invalid('ids', `'ids' is a list of 1 to ${MAX_IDS} quarantine ids, as the listing gives them.`);
  }
  return value as string[];
}

function rowJson(r: QuarantinedRow): Record<string, unknown> {
  return {
    id: r.id,
    table: r.table,
    event_uuid: r.eventUuid,
    code: r.code,
    reason: r.reason,
    error: r.error,
    status: r.status,
    attempts: r.attempts,
    quarantined_at: r.quarantinedAt,
    row: r.row,
  };
}
