/**
 * The commit log's writer thread on real files: commits posted back to back land in order where they were
 * aimed, a failed write is reported with its error code and the thread goes on, a thread that stops fails
 * the commits under way and every later one, and a closed thread fails what it is given.
 */
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CommitThread } from '../../src/store/embedded/commit-thread.ts';

async function tempFile(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'weir-commit-thread-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'log');
}

function commit(
  io: CommitThread,
  fd: number,
  parts: Buffer[],
  position: number,
): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolve) => io.commit(fd, parts, position, true, resolve));
}

t.test('commits posted back to back land in order, each where it was aimed', async (t) => {
  const path = await tempFile(t);
  const fh = await open(path, 'w');
  const io = new CommitThread();
  t.teardown(() => io.close());
  const answered: number[] = [];
  let position = 0;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < 200; i++) {
    // Two parts a commit, as the log gives (a frame's head, then its rows).
    const parts = [Buffer.from(`${i}:`), Buffer.from(`${'x'.repeat(i % 7)}\n`)];
    pending.push(
      commit(io, fh.fd, parts, position).then((err) => (err ? t.fail(err.message) : answered.push(i))),
    );
    position += parts[0]!.length + parts[1]!.length;
  }
  await Promise.all(pending);
  t.same(
    answered,
    Array.from({ length: 200 }, (_, i) => i),
    'answered in the order posted',
  );
  await fh.close();
  const expected = Array.from({ length: 200 }, (_, i) => `${i}:${'x'.repeat(i % 7)}\n`).join('');
  t.equal(await readFile(path, 'utf8'), expected);
});

t.test('a failed write is reported with its code, and the thread goes on', async (t) => {
  const path = await tempFile(t);
  const readOnly = await open(path, 'w').then(async (fh) => {
    await fh.close();
    return open(path, 'r');
  });
  const io = new CommitThread();
  t.teardown(() => io.close());
  const err = await commit(io, readOnly.fd, [Buffer.from('a\n')], 0);
  t.equal(err?.code, 'EBADF', 'the write into a file opened for reading fails');
  await readOnly.close();
  const fh = await open(path, 'r+');
  t.equal(await commit(io, fh.fd, [Buffer.from('b\n')], 0), null, 'the next commit is written');
  await fh.close();
  t.equal(await readFile(path, 'utf8'), 'b\n');
});

t.test('a closed thread fails every commit it is given', async (t) => {
  const path = await tempFile(t);
  const fh = await open(path, 'w');
  t.teardown(() => fh.close());
  const io = new CommitThread();
  await io.close();
  const err = await commit(io, fh.fd, [Buffer.from('a\n')], 0);
  t.match(err?.message, /closed/);
  t.equal(await readFile(path, 'utf8'), '', 'nothing was written');
});

t.test('a thread that stops fails the commits under way and every later one', async (t) => {
  const path = await tempFile(t);
  const fh = await open(path, 'w');
  t.teardown(() => fh.close());
  // A thread that dies on its first commit, as one would on a bug or a crash of its own.
  const entry = join(path, '..', 'dies.mjs');
  await writeFile(
    entry,
    "import { parentPort } from 'node:worker_threads';\nparentPort.on('message', () => process.exit(7));\n",
  );
  const io = new CommitThread(entry);
  t.teardown(() => io.close());
  const first = await commit(io, fh.fd, [Buffer.from('a\n')], 0);
  t.match(first?.message, /stopped \(exit code 7\)/, 'the commit under way fails');
  const later = await commit(io, fh.fd, [Buffer.from('b\n')], 0);
  t.match(later?.message, /stopped/, 'so does the next');
  t.equal(await readFile(path, 'utf8'), '', 'nothing was written');
});
