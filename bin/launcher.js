// Runs Weir with the launch settings (launch-settings.js) however it is started — `npx weir`, a systemd unit,
// a process manager — not only through package.json or the image. A malloc setting must be in the environment
// before the process starts and a heap flag on node's command line, so when either is missing the process
// starts again with them: in place where node can (process.execve keeps the PID a supervisor knows), else as
// a child it stands in for.
import { spawn } from 'node:child_process';
import { Socket } from 'node:net';
import { constants } from 'node:os';
import { setTimeout } from 'node:timers';
import {
  LAUNCH_SETTINGS_VARIABLE,
  RELAUNCHED_VARIABLE,
  launchSettingsWanted,
  missingLaunchSettings,
} from './launch-settings.js';

/** The signals a supervisor or a terminal stops Weir with, which the child must get as Weir would. */
const FORWARDED = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/** The child's end of the socket on which the launcher reports the signals it got. */
const CONTROL_FD = 3;

/**
 * How long the child waits, once the launcher reports a signal, for that signal to reach it directly too:
 * a terminal's Ctrl-C goes to the whole process group and systemd signals every process of the unit, and
 * Weir takes a second SIGTERM as an order to stop at once.
 */
const SAME_SIGNAL_MS = 100;

/**
 * Returns true in the process that is to run Weir. False means this process is only the launcher: it has
 * started that process (or failed to, and set process.exitCode) and must load nothing else.
 */
export function launch() {
  const env = process.env;
  const relaunched = env[RELAUNCHED_VARIABLE];
  let wanted;
  try {
    wanted = launchSettingsWanted(env);
  } catch (err) {
    process.stderr.write(`weir: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
    return false;
  }
  // Both are the launcher's, not settings of Weir's, whose config refuses a WEIR_* variable it does not know.
  delete env[RELAUNCHED_VARIABLE];
  delete env[LAUNCH_SETTINGS_VARIABLE];
  if (relaunched !== undefined) {
    if (relaunched === 'child') followLauncher();
    return true;
  }
  if (!wanted) return true;
  const missing = missingLaunchSettings(env, process.execArgv);
  if (Object.keys(missing.env).length === 0 && missing.nodeArgs.length === 0) return true;
  const args = [...missing.nodeArgs, ...process.execArgv, ...process.argv.slice(1)];
  const childEnv = { ...env, ...missing.env };
  if (typeof process.execve === 'function') {
    try {
      process.execve(process.execPath, [process.argv0, ...args], {
        ...childEnv,
        [RELAUNCHED_VARIABLE]: 'exec',
      });
    } catch {
      // Where it fails (a platform without it throws), a child does the same.
    }
  }
  startChild(args, { ...childEnv, [RELAUNCHED_VARIABLE]: 'child' });
  return false;
}

/**
 * The launcher's side when it runs Weir as a child: it passes on the signals it gets and ends as the child
 * ended, with its exit code or by its signal, so a supervisor sees Weir's exit codes.
 */
function startChild(args, env) {
  const child = spawn(process.execPath, args, {
    argv0: process.argv0,
    env,
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
  });
  const control = child.stdio[CONTROL_FD];
  // Writing to a child that has gone fails; its exit, which follows, says how it ended.
  control.on('error', () => undefined);
  const received = Object.fromEntries(FORWARDED.map((signal) => [signal, 0]));
  const forward = (signal) => {
    received[signal]++;
    control.write(`${signal} ${received[signal]}\n`);
  };
  for (const signal of FORWARDED) process.on(signal, forward);
  child.once('error', (err) => {
    process.stderr.write(
      `weir: could not start ${process.execPath} with the launch settings (${err.message}); ` +
        `${LAUNCH_SETTINGS_VARIABLE}=false runs Weir without them\n`,
    );
    process.exit(1);
  });
  child.once('exit', (code, signal) => {
    if (signal === null) process.exit(code ?? 1);
    for (const s of FORWARDED) process.off(s, forward);
    process.kill(process.pid, signal);
    // Reached only for a signal node does not die of (it keeps SIGUSR1 for its inspector, ignores SIGPIPE).
    process.exit(128 + (constants.signals[signal] ?? 0));
  });
}

/**
 * The child's side: each signal the launcher reports reaches Weir's listeners once, whether or not it came
 * to this process directly as well; and the child does not outlive a launcher that was killed.
 */
function followLauncher() {
  const handled = Object.fromEntries(FORWARDED.map((signal) => [signal, 0]));
  for (const signal of FORWARDED) {
    const count = () => {
      handled[signal]++;
      // With no listener of Weir's the signal ends the process, as it would if this one were not here.
      if (process.listenerCount(signal) === 1) {
        process.off(signal, count);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, count);
  }
  let control;
  try {
    control = new Socket({ fd: CONTROL_FD, readable: true, writable: false });
  } catch {
    return; // Not started by the launcher after all (the variable set by hand): nothing to follow.
  }
  let partial = '';
  control.on('data', (chunk) => {
    const lines = (partial + chunk.toString('latin1')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const [signal, n] = line.split(' ');
      if (!FORWARDED.includes(signal)) continue;
      const reported = Number(n);
      setTimeout(() => {
        for (let i = handled[signal]; i < reported; i++) process.emit(signal, signal);
      }, SAME_SIGNAL_MS).unref();
    }
  });
  control.on('error', () => undefined);
  // The launcher gone without the child (SIGKILL), nothing would report Weir's exit or pass it a signal.
  control.on('close', () => process.kill(process.pid, 'SIGKILL'));
  control.unref();
}
