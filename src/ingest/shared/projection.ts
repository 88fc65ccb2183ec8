import type { Row } from '../../core/ports.ts';
import { chTime } from '../../store/ch-time.ts';
import type { BatchWriter } from '../batch-writer.ts';
import { allCommitted, writeState } from '../persons/state-writes.ts';
import type { PersonRecord } from './person-records.ts';

/**
 * The rows that project the shared person state into the store (`persons`, `person_distinct_ids`): a row
 * for every record state an event wrote or completed, versioned by the KV revision it describes. Revisions
 * are the bucket's stream sequence: they only grow, across every record and every process, so of two rows
 * of one person (or one distinct id) ReplacingMergeTree keeps the one of the later write, whichever process
 * committed it first. Rows are gathered per event (one per person and distinct id, the newest) and written
 * through the group-commit writer when the event is done.
 */
export class Projection {
  readonly #project: number;
  readonly #persons = new Map<string, Row>();
  readonly #links = new Map<string, Row>();

  constructor(projectId: number) {
    this.#project = projectId;
  }

  get empty(): boolean {
    return this.#persons.size === 0 && this.#links.size === 0;
  }

  /** The persons that have a row here. */
  personIds(): Iterable<string> {
    return this.#persons.keys();
  }

  /** The row of a person as `record` at `revision` says (deleted when it was merged away). */
  person(personId: string, record: PersonRecord, revision: number): void {
    const had = this.#persons.get(personId);
    if (had && (had['version'] as number) >= revision) return;
    this.#persons.set(personId, {
      project_id: this.#project,
      id: personId,
      properties: JSON.stringify(record.properties),
      is_identified: record.isIdentified ? 1 : 0,
      created_at: chTime(record.createdAt),
      version: revision,
      is_deleted: record.mergedInto === undefined ? 0 : 1,
    });
  }

  /** The row pointing `distinctId` at `personId`, as of the write at `revision`. */
  link(distinctId: string, personId: string, revision: number): void {
    const had = this.#links.get(distinctId);
    if (had && (had['version'] as number) >= revision) return;
    this.#links.set(distinctId, {
      project_id: this.#project,
      distinct_id: distinctId,
      person_id: personId,
      version: revision,
      is_deleted: 0,
    });
  }

  /** Hands the rows to the writer; the commit, or undefined when there were none. */
  write(writer: BatchWriter): Promise<void> | undefined {
    if (this.empty) return undefined;
    return writeState(
      writer,
      [
        { table: 'persons', rows: [...this.#persons.values()] },
        { table: 'person_distinct_ids', rows: [...this.#links.values()] },
      ],
      () => undefined,
    );
  }
}

/**
 * Per person id, the commit of the rows this process wrote for it and not yet committed: an event that
 * names the person without writing must still not be answered before its person's row is durable.
 */
export class Committing {
  readonly #byPerson = new Map<string, Promise<void>>();

  get(personId: string): Promise<void> | undefined {
    return this.#byPerson.get(personId);
  }

  add(personIds: Iterable<string>, commit: Promise<void>): void {
    for (const id of personIds) {
      const all = allCommitted([this.#byPerson.get(id), commit])!;
      this.#byPerson.set(id, all);
      const clear = (): void => {
        if (this.#byPerson.get(id) === all) this.#byPerson.delete(id);
      };
      all.then(clear, clear);
    }
  }
}
