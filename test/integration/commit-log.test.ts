/**
 * The commit log on real files: what is appended is read back after a reopen, concurrent appends share one
 * write and keep their order, the next commit is written while the last syncs yet answered after it, a
 * failed write or sync takes the commits after it along and is cut off the file, a torn tail is cut off, a
 * damaged older segment is set aside, and applied segments are removed.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { fdatasync, writev } from 'node:fs';
import { CommitLog, readFrames, type LogIo } from '../../src/store/embedded/commit-log.ts';

async function tempDir(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-commit-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const rows = (...values: string[]): Buffer => Buffer.from(values.map((v) => `{"v":"${v}"}\n`).join(''));

t.test('appended frames come back, in order, after a reopen', async (t) => {
  const dir = await tempDir(t);
  const { log, recovery } = await CommitLog.open({ dir, fsync: true });
  t.same(recovery.frames, [], 'a new log is empty');
  const written = await Promise.all([
    log.append('events', 2, rows('a', 'b')),
    log.append('persons', 1, rows('p')),
    log.append('events', 1, rows('c')),
  ]);
  t.ok(
    written.every((f, i) => i === 0 || f.end.offset > written[i - 1]!.end.offset),
    'positions grow in append order',
  );
  await log.close();

  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => [f.table, f.rows, f.data.toString()]),
    [
      ['events', 2, '{"v":"a"}\n{"v":"b"}\n'],
      ['persons', 1, '{"v":"p"}\n'],
      ['events', 1, '{"v":"c"}\n'],
    ],
  );
  t.same(again.recovery.applied, { segment: 0, offset: 0 });
  await again.log.close();
});

t.test('frames of rows given as values keep their columns; frames of objects have none', async (t) => {
  const dir = await tempDir(t);
  const { log } = await CommitLog.open({ dir, fsync: true });
  const columns = ['project_id', 'uuid', '$group_0'];
  await log.append('events', 2, Buffer.from('[[1,"a",""],[1,"b",""]]'), columns);
  await log.append('events', 1, Buffer.from('[{"v":"o"}]'));
  await log.close();

  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => [f.table, f.columns, f.rows, f.data.toString()]),
    [
      ['events', columns, 2, '[[1,"a",""],[1,"b",""]]'],
      ['events', undefined, 1, '[{"v":"o"}]'],
    ],
  );
  await again.log.close();
});

t.test('a table name or column list the log cannot keep is refused, and the log goes on', async (t) => {
  const dir = await tempDir(t);
  const { log } = await CommitLog.open({ dir, fsync: true });
  const data = Buffer.from('[[1]]');
  await t.rejects(log.append('', 1, data), /table name/);
  await t.rejects(log.append('t'.repeat(256), 1, data), /table name/);
  await t.rejects(log.append('events', 1, data, []), /column list/);
  await t.rejects(log.append('events', 1, data, ['a,b']), /column list/);
  await t.rejects(log.append('events', 1, data, ['a`; DROP TABLE x']), /column list/);
  const frame = await log.append('events', 1, data, ['a']);
  t.same(frame.columns, ['a']);
  await log.close();
});

t.test('concurrent appends in one tick go out in one write', async (t) => {
  const dir = await tempDir(t);
  const { log } = await CommitLog.open({ dir, fsync: false });
  const frames = await Promise.all(
    Array.from({ length: 200 }, (_, i) => log.append('events', 1, rows(String(i)))),
  );
  t.equal(new Set(frames.map((f) => f.end.segment)).size, 1);
  await log.close();
  const { recovery, log: reopened } = await CommitLog.open({ dir, fsync: false });
  t.same(
    recovery.frames.map((f) => f.data.toString()),
    Array.from({ length: 200 }, (_, i) => `{"v":"${i}"}\n`),
  );
  await reopened.close();
});

/**
 * node:fs underneath: each commit is written at once, but its sync waits until the test releases it, and a
 * write or sync can be made to fail: the order in which commits are written, synced and answered is then
 * the test's to set.
 */
class HeldIo implements LogIo {
  readonly writes: number[] = [];
  readonly syncs: ((err?: NodeJS.ErrnoException) => void)[] = [];
  failWrite: NodeJS.ErrnoException | undefined;

  commit(
    fd: number,
    parts: readonly Buffer[],
    position: number,
    sync: boolean,
    callback: (err: NodeJS.ErrnoException | null) => void,
  ): void {
    this.writes.push(position);
    const fail = this.failWrite;
    this.failWrite = undefined;
    if (fail) {
      // Half of it reaches the file first, as a write cut short by a full disk might.
      writev(fd, [parts[0]!.subarray(0, 4)], position, () => callback(fail));
      return;
    }
    writev(fd, [...parts], position, (err) => {
      if (err || !sync) callback(err);
      else this.syncs.push((e) => (e ? callback(e) : fdatasync(fd, callback)));
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

const ioError = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });

/**
 * Resolves once `done()` holds, checking after each turn of the event loop, for at most 10 s. A deadline, not
 * a count of turns: file I/O on the thread pool (opening the next segment) takes more turns the faster they
 * are, and 1,000 turns were not enough once this project's VM got faster.
 */
async function until(done: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!done() && performance.now() < deadline) await new Promise((r) => setImmediate(r));
  if (!done()) throw new Error('condition not reached');
}

t.test('the next commit is under way while the last syncs, and answered only after it', async (t) => {
  const dir = await tempDir(t);
  const io = new HeldIo();
  const { log } = await CommitLog.open({ dir, fsync: true, io, maxInFlight: 2 });
  const answered: string[] = [];
  const append = (v: string): Promise<unknown> =>
    log.append('events', 1, rows(v)).then((f) => answered.push(`${v}@${f.end.offset}`));
  const a = append('a');
  await until(() => io.syncs.length === 1);
  const b = append('b');
  await until(() => io.syncs.length === 2);
  t.equal(io.writes.length, 2, "b was handed over while a's sync was still under way");
  const c = append('c');
  await new Promise((r) => setImmediate(r));
  t.equal(io.writes.length, 2, 'a third waits: two commits are under way');
  io.syncs[1]!(); // b's sync returns first
  await new Promise((r) => setImmediate(r));
  t.same(answered, [], "b is not answered before a: a's bytes might not be durable yet");
  io.syncs[0]!();
  await Promise.all([a, b]);
  t.same(
    answered.map((x) => x.split('@')[0]),
    ['a', 'b'],
  );
  await until(() => io.syncs.length === 3);
  io.syncs[2]!();
  await c;
  await log.close();
  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => f.data.toString()),
    ['{"v":"a"}\n', '{"v":"b"}\n', '{"v":"c"}\n'],
  );
  await again.log.close();
});

t.test('a failed write fails the commits after it, is cut off, and the log goes on', async (t) => {
  const dir = await tempDir(t);
  const io = new HeldIo();
  const { log } = await CommitLog.open({ dir, fsync: true, io, maxInFlight: 3 });
  const a = log.append('events', 1, rows('a'));
  await until(() => io.syncs.length === 1);
  io.failWrite = ioError('ENOSPC');
  const b = log.append('events', 1, rows('b'));
  const bRejected = t.rejects(b, /ENOSPC/);
  await until(() => io.writes.length === 2);
  io.syncs[0]!();
  const aFrame = await a;
  await bRejected;
  const c = log.append('events', 1, rows('c'));
  await until(() => io.syncs.length === 2);
  io.syncs[1]!();
  await c;
  await log.close();
  t.equal(io.writes[2], aFrame.end.offset, 'c went where a ended: the half-written b was cut off');
  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => f.data.toString()),
    ['{"v":"a"}\n', '{"v":"c"}\n'],
  );
  t.equal(again.recovery.truncatedBytes, 0, 'nothing torn was left behind');
  await again.log.close();
});

t.test('a failed sync fails its commit and the one written after it, though that one synced', async (t) => {
  const dir = await tempDir(t);
  const io = new HeldIo();
  const { log } = await CommitLog.open({ dir, fsync: true, io, maxInFlight: 3 });
  const a = log.append('events', 1, rows('a'));
  await until(() => io.syncs.length === 1);
  const b = log.append('events', 1, rows('b'));
  await until(() => io.syncs.length === 2);
  const outcomes = Promise.allSettled([a, b]);
  io.syncs[1]!();
  io.syncs[0]!(ioError('EIO'));
  const [ra, rb] = await outcomes;
  t.equal(ra.status, 'rejected');
  t.equal(rb.status, 'rejected', "b's sync cannot vouch for a's pages once a's sync failed");
  t.match((ra as PromiseRejectedResult).reason, /EIO/);
  const c = log.append('events', 1, rows('c'));
  await until(() => io.syncs.length === 3);
  io.syncs[2]!();
  await c;
  t.equal(io.writes[2], 0, 'c starts the segment again');
  await log.close();
  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => f.data.toString()),
    ['{"v":"c"}\n'],
  );
  await again.log.close();
});

t.test('the segment rotates once the commits under way are done', async (t) => {
  const dir = await tempDir(t);
  const io = new HeldIo();
  const { log } = await CommitLog.open({ dir, fsync: true, io, segmentBytes: 1, maxInFlight: 3 });
  const a = log.append('events', 1, rows('a'));
  await until(() => io.syncs.length === 1);
  const b = log.append('events', 1, rows('b'));
  await new Promise((r) => setImmediate(r));
  t.equal(io.writes.length, 1, 'b waits: the segment is full, and a is still syncing in it');
  io.syncs[0]!();
  const aFrame = await a;
  await until(() => io.syncs.length === 2);
  io.syncs[1]!();
  const bFrame = await b;
  t.equal(bFrame.end.segment, aFrame.end.segment + 1, 'b opened the next segment');
  await log.close();
  const again = await CommitLog.open({ dir, fsync: false });
  t.same(
    again.recovery.frames.map((f) => f.data.toString()),
    ['{"v":"a"}\n', '{"v":"b"}\n'],
  );
  await again.log.close();
});

t.test('a torn write at the tail is cut off; what came before survives', async (t) => {
  const dir = await tempDir(t);
  const { log } = await CommitLog.open({ dir, fsync: false });
  const kept = await log.append('events', 1, rows('kept'));
  await log.close();
  const segment = join(dir, `${String(kept.end.segment).padStart(20, '0')}.log`);
  // Half a frame: a length that promises more bytes than follow.
  const torn = Buffer.alloc(20);
  torn.writeUInt32LE(1000, 0);
  await appendFile(segment, torn);

  const { recovery, log: reopened } = await CommitLog.open({ dir, fsync: false });
  t.same(
    recovery.frames.map((f) => f.data.toString()),
    ['{"v":"kept"}\n'],
  );
  t.equal(recovery.truncatedBytes, 20);
  t.equal((await stat(segment)).size, kept.end.offset, 'the file is cut back to its last whole frame');
  await reopened.close();
});

t.test('a damaged frame in an older segment sets that segment aside', async (t) => {
  const dir = await tempDir(t);
  const first = await CommitLog.open({ dir, fsync: false });
  const a = await first.log.append('events', 1, rows('a'));
  await first.log.close();
  const second = await CommitLog.open({ dir, fsync: false });
  await second.log.append('events', 1, rows('b'));
  await second.log.close();

  const path = join(dir, `${String(a.end.segment).padStart(20, '0')}.log`);
  const bytes = await readFile(path);
  bytes[bytes.length - 3]! ^= 0xff; // flip a byte inside the payload: the CRC no longer matches
  await writeFile(path, bytes);

  const { recovery, log } = await CommitLog.open({ dir, fsync: false });
  t.same(
    recovery.frames.map((f) => f.data.toString()),
    ['{"v":"b"}\n'],
    'the newer segment is read',
  );
  t.same(recovery.corruptSegments, [`${path}.corrupt`]);
  t.ok((await readdir(dir)).includes(`${String(a.end.segment).padStart(20, '0')}.log.corrupt`));
  await log.close();
});

t.test('applying moves the start of the log and removes covered segments', async (t) => {
  const dir = await tempDir(t);
  const first = await CommitLog.open({ dir, fsync: false, segmentBytes: 1 });
  const a = await first.log.append('events', 1, rows('a'));
  const b = await first.log.append('events', 1, rows('b')); // past segmentBytes: a new segment
  t.ok(b.end.segment > a.end.segment, 'the log rotated');
  const intent = { from: { segment: 0, offset: 0 }, to: b.end, token: 't1' };
  await first.log.beginApply(intent);
  await first.log.close();

  // A stop while the block is applied: the intent is read back with the frames it covers.
  const during = await CommitLog.open({ dir, fsync: false });
  t.same(during.recovery.intent, intent);
  t.equal(during.recovery.frames.length, 2);
  await during.log.endApply(b.end);
  await during.log.close();
  t.notOk(
    (await readdir(dir)).includes(`${String(a.end.segment).padStart(20, '0')}.log`),
    'the fully applied segment is gone',
  );

  const { recovery, log } = await CommitLog.open({ dir, fsync: false });
  t.same(recovery.frames, [], 'nothing left to apply');
  t.same(recovery.applied, b.end);
  t.equal(recovery.intent, undefined);
  await log.close();
});

t.test('readFrames stops at a frame whose length is implausible', (t) => {
  const bad = Buffer.alloc(16);
  bad.writeUInt32LE(2, 0); // shorter than the smallest payload
  t.same(readFrames(bad, 1, 0), { frames: [], validEnd: 0 });
  t.end();
});
