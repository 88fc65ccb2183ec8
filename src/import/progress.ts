import { SingleBar } from 'cli-progress';

/** The counts of a run so far, as the progress display and the summary show them. */
export interface Counts {
  read: number;
  sent: number;
  stored: number;
  refused: number;
  /** Input bytes read (compressed, as on disk). */
  bytes: number;
}

export interface ProgressOptions {
  /** A terminal: a bar redrawn in place. Otherwise a plain line every `intervalMs`, for logs. */
  readonly tty: boolean;
  /** Bytes of all inputs on disk, when known (not for standard input): the bar's whole and its ETA. */
  readonly totalBytes: number | undefined;
  readonly intervalMs: number;
  readonly write: (line: string) => void;
}

const mb = (b: number): string => (b / 1e6).toFixed(b < 1e7 ? 1 : 0);

/**
 * Shows how an import goes, on standard error so that standard output keeps only the summary. On a terminal
 * a cli-progress bar over the input's bytes (events, events/s, bytes, ETA); elsewhere a line now and then.
 */
export class Progress {
  readonly #options: ProgressOptions;
  readonly #started = Date.now();
  #bar: SingleBar | undefined;
  #timer: NodeJS.Timeout | undefined;
  #counts: Counts | undefined;

  constructor(options: ProgressOptions) {
    this.#options = options;
  }

  start(counts: Counts): void {
    this.#counts = counts;
    if (this.#options.tty) {
      this.#bar = new SingleBar({
        stream: process.stderr,
        format:
          ' {bar} {percentage}% | {events} events | {rate} events/s | {mbRead}/{mbTotal} MB | ETA {eta_formatted}',
        hideCursor: true,
        etaBuffer: 50,
        fps: 5,
      });
      this.#bar.start(this.#options.totalBytes ?? 0, 0, this.#payload(counts));
      this.#timer = setInterval(() => this.#bar?.update(counts.bytes, this.#payload(counts)), 200);
    } else {
      this.#timer = setInterval(() => this.#options.write(this.line(counts)), this.#options.intervalMs);
    }
    this.#timer.unref();
  }

  /** One plain line of the counts so far. */
  line(c: Counts): string {
    const total = this.#options.totalBytes === undefined ? '' : ` of ${mb(this.#options.totalBytes)}`;
    return (
      `import: ${c.read} read, ${c.stored} stored, ${c.refused} refused, ${this.#rate(c)} events/s, ` +
      `${mb(c.bytes)}${total} MB`
    );
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    if (this.#bar !== undefined && this.#counts !== undefined) {
      this.#bar.update(this.#counts.bytes, this.#payload(this.#counts));
      this.#bar.stop();
    }
  }

  #rate(c: Counts): number {
    const s = (Date.now() - this.#started) / 1000;
    return s > 0 ? Math.round(c.stored / s) : 0;
  }

  #payload(c: Counts): Record<string, string | number> {
    return {
      events: c.stored,
      rate: this.#rate(c),
      mbRead: mb(c.bytes),
      mbTotal: this.#options.totalBytes === undefined ? '?' : mb(this.#options.totalBytes),
    };
  }
}
