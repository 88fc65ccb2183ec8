// The commit log's writer thread (src/store/embedded/commit-thread.ts). Plain JavaScript with no imports but Node's
// own, so the thread starts in milliseconds without a TypeScript loader.
//
// It takes commits in the order they were posted: { id, fd, position, sync, data } with `data` an
// ArrayBuffer handed over (not copied). Commits that queued up while it was busy, and that follow one
// another in the same file, go out in one writev and share one fdatasync. Each is answered { id, error },
// error null or { message, code } - after its bytes are written and, when `sync` is set, on the disk.
import { Buffer } from 'node:buffer';
import { fdatasyncSync, writevSync } from 'node:fs';
import { parentPort, receiveMessageOnPort } from 'node:worker_threads';

if (!parentPort) throw new Error('bin/commit-thread.js runs as a worker thread of the commit log');
const port = parentPort;

/** Writes all of `buffers` at `position`, again from where the kernel stopped if it took less. */
function writeAll(fd, buffers, position) {
  let parts = buffers;
  let at = position;
  while (parts.length > 0) {
    let written = writevSync(fd, parts, at);
    at += written;
    let i = 0;
    while (i < parts.length && written >= parts[i].length) written -= parts[i++].length;
    parts = i < parts.length ? [parts[i].subarray(written), ...parts.slice(i + 1)] : [];
  }
}

/** Writes (and syncs) a run of commits that follow one another in one file; answers each. */
function commitRun(run) {
  let error = null;
  try {
    writeAll(
      run[0].fd,
      run.map((c) => Buffer.from(c.data)),
      run[0].position,
    );
    if (run.some((c) => c.sync)) fdatasyncSync(run[0].fd);
  } catch (err) {
    error = { message: err instanceof Error ? err.message : String(err), code: err?.code };
  }
  for (const c of run) port.postMessage({ id: c.id, error });
}

port.on('message', (first) => {
  // Everything else already posted joins this turn: one write and one sync for all of it.
  const commits = [first];
  for (let next = receiveMessageOnPort(port); next; next = receiveMessageOnPort(port))
    commits.push(next.message);
  let run = [commits[0]];
  for (const c of commits.slice(1)) {
    const last = run[run.length - 1];
    if (c.fd === last.fd && c.position === last.position + last.data.byteLength) run.push(c);
    else {
      commitRun(run);
      run = [c];
    }
  }
  commitRun(run);
});
