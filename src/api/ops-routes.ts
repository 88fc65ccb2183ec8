import { AggregatorRegistry } from 'prom-client';
import type { HttpApp } from '../http/transport.ts';
import type { Metrics, MetricsJson } from '../core/metrics.ts';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import { corsHeaders } from '../http/cors.ts';
import { Reply } from '../http/reply.ts';

export interface OpsDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Whether this process takes traffic now (false while starting or draining). */
  readonly isReady: () => boolean;
  /** Whether the process works as it should (a dead capture thread makes it unhealthy). @default always */
  readonly isHealthy?: () => boolean;
  /** Metrics kept elsewhere in the process (capture threads), merged into `/metrics` (counters summed). */
  readonly moreMetrics?: () => Promise<MetricsJson[]>;
}

/** `/_health` (the process is alive), `/_ready` (it takes traffic), `/metrics` (Prometheus), and a JSON 404. */
export function registerOpsRoutes(app: HttpApp, deps: OpsDeps): void {
  app.get('/_health', (res) => {
    const healthy = deps.isHealthy?.() ?? true;
    new Reply(res).json(healthy ? 200 : 503, { status: healthy ? 'ok' : 'unhealthy' });
  });
  app.get('/_ready', (res) => {
    const ready = deps.isReady();
    new Reply(res).json(ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
  });
  app.get('/metrics', (res) => {
    const reply = new Reply(res);
    metricsText(deps).then(
      (text) => reply.send(200, text, { 'Content-Type': deps.metrics.registry.contentType }),
      (err: unknown) => {
        deps.logger.error({ err }, 'metrics collection failed');
        reply.error(err);
      },
    );
  });
  // With CORS headers: on the capture host a browser reads this answer, and without them it reports a
  // CORS failure instead of the 404.
  app.any('/*', (res, req) => {
    new Reply(res).error(
      new AppError('not_found', { detail: 'No route matches this path.' }),
      corsHeaders(req.getHeader('origin')),
    );
  });
}

async function metricsText(deps: OpsDeps): Promise<string> {
  if (!deps.moreMetrics) return deps.metrics.registry.metrics();
  const [own, more] = await Promise.all([deps.metrics.registry.getMetricsAsJSON(), deps.moreMetrics()]);
  return AggregatorRegistry.aggregate([own, ...more]).metrics();
}
