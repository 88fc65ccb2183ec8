import type { CapturedEvent, IngestionWarning } from '../core/event.ts';
import type { PipelineEvent, Step } from '../core/step.ts';

export interface PipelineOutput {
  readonly events: PipelineEvent[];
  readonly warnings: IngestionWarning[];
  /** Commits of the state rows (persons, groups) the steps wrote; the batch is durable only after them. */
  readonly written: Promise<void>[];
}

/** The person properties of an event that has no person (shared: nothing writes into it). */
const NO_PROPERTIES: Record<string, unknown> = Object.freeze({});

/**
 * The ingest pipeline: the steps, in the one place their order is written down. Each event runs through
 * every step until one drops it. Steps may be synchronous; the pipeline awaits only those that are not.
 */
export class Pipeline {
  readonly #steps: readonly Step[];

  constructor(steps: readonly Step[]) {
    this.#steps = steps;
  }

  async run(events: readonly CapturedEvent[]): Promise<PipelineOutput> {
    const out: PipelineOutput = { events: [], warnings: [], written: [] };
    const steps = this.#steps;
    // Indexed loops: an await inside a for-of keeps its iterator alive across the suspension, and each
    // step then allocated an iterator result (8% of what ingest allocated per event in batch mode).
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!;
      if (step.prepare) await step.prepare(events);
    }
    for (let e = 0; e < events.length; e++) {
      const captured = events[e]!;
      // Every field written out: one object shape for all events, and no generic copy per event.
      const event: PipelineEvent = {
        projectId: captured.projectId,
        uuid: captured.uuid,
        event: captured.event,
        distinctId: captured.distinctId,
        timestamp: captured.timestamp,
        properties: captured.properties,
        propertiesJson: captured.propertiesJson,
        receivedAt: captured.receivedAt,
        personId: '',
        personMode: 'full',
        personProperties: NO_PROPERTIES,
        groups: ['', '', '', '', ''],
      };
      let kept = true;
      for (let i = 0; i < steps.length; i++) {
        const pending = steps[i]!.run(event);
        const result = pending instanceof Promise ? await pending : pending;
        if (result.kind === 'drop') {
          if (result.warning) out.warnings.push(result.warning);
          kept = false;
          break;
        }
        if (result.written) out.written.push(result.written);
        if (result.kind === 'warn') out.warnings.push(result.warning);
      }
      if (kept) out.events.push(event);
    }
    return out;
  }
}
