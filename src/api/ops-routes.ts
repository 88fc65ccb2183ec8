import type { TemplatedApp } from 'uWebSockets.js';
import type { Metrics } from '../core/metrics.ts';
import type { Logger } from '../core/logger.ts';
import { AppError } from '../errors/app-error.ts';
import { Reply } from '../http/uws.ts';

export interface OpsDeps {
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Whether this process takes traffic now (false while starting or draining). */
  readonly isReady: () => boolean;
}

/** `/_health` (the process is alive), `/_ready` (it takes traffic), `/metrics` (Prometheus), and a JSON 404. */
export function registerOpsRoutes(app: TemplatedApp, deps: OpsDeps): void {
  app.get('/_health', (res) => new Reply(res).json(200, { status: 'ok' }));
  app.get('/_ready', (res) => {
    const ready = deps.isReady();
    new Reply(res).json(ready ? 200 : 503, { status: ready ? 'ready' : 'not_ready' });
  });
  app.get('/metrics', (res) => {
    const reply = new Reply(res);
    deps.metrics.registry.metrics().then(
      (text) => reply.send(200, text, { 'Content-Type': deps.metrics.registry.contentType }),
      (err: unknown) => {
        deps.logger.error({ err }, 'metrics collection failed');
        reply.error(err);
      },
    );
  });
  app.any('/*', (res) => {
    new Reply(res).error(new AppError('not_found', { detail: 'No route matches this path.' }));
  });
}
