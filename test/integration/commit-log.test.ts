/**
 * The commit log on real files: what is appended is read back after a reopen, concurrent appends share one
 * write and keep their order, a torn tail is cut off, a damaged older segment is set aside, and applied
 * segments are removed.
 */
import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CommitLog, readFrames } from '../../src/store/commit-log.ts';

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
