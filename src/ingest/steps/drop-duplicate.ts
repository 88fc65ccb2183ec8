import { OK, type PipelineEvent, type Step, type StepResult } from '../../core/step.ts';
import type { DedupWindow } from '../dedup-window.ts';

/** Drops an event whose uuid was already stored (a retried request), so no query ever sees it twice. */
export function dropDuplicate(window: DedupWindow): Step {
  return {
    name: 'drop-duplicate',
    run(event: PipelineEvent): StepResult {
      const seen = window.check(dedupKey(event.projectId, event.uuid));
      if (seen === 'new') return OK;
      return { kind: 'drop', reason: 'duplicate', settled: seen === 'committed' ? undefined : seen };
    },
  };
}

export function dedupKey(projectId: number, uuid: string): string {
  return `${projectId}:${uuid}`;
}
