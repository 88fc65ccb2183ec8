// The process settings Weir was soaked with (docs/operations.md, "Memory over days"). bin/weir.js reads them
// before anything else is loaded, and the benches and tests read them here, so every way of starting Weir
// gets the same ones. Plain JavaScript without imports: it runs before tsx's loader is registered.

/**
 * Environment read before Weir's code runs: glibc reads MALLOC_ARENA_MAX at the first malloc, so that chDB's
 * threads share two arenas instead of each keeping what it freed in one of its own.
 */
export const LAUNCH_ENV = Object.freeze({ MALLOC_ARENA_MAX: '2' });

/**
 * Node flags V8 reads when it sets up the heap: a young generation large enough that a request's Buffers die
 * in it instead of waiting for a full GC.
 */
export const LAUNCH_NODE_ARGS = Object.freeze(['--max-semi-space-size=64']);

/** `false` (or `0`, `no`, `off`) runs Weir as node was started, without adding the settings. */
export const LAUNCH_SETTINGS_VARIABLE = 'WEIR_LAUNCH_SETTINGS';

/**
 * Set by the launcher in the environment of the process it starts, so that process never starts another;
 * its value says how it was started (`exec`: in place, `child`: as a child whose fd 3 is the launcher's).
 */
export const RELAUNCHED_VARIABLE = 'WEIR_LAUNCHED';

/**
 * Whether the launcher should add the settings, by `WEIR_LAUNCH_SETTINGS` (the words config.ts takes for a
 * boolean; unset means yes). Throws on any other value, so a typo never silently runs the other way.
 */
export function launchSettingsWanted(env) {
  const raw = env[LAUNCH_SETTINGS_VARIABLE];
  if (raw === undefined) return true;
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`${LAUNCH_SETTINGS_VARIABLE} must be true or false, got '${raw}'`);
}

/** `--max_semi_space_size=1` → `--max-semi-space-size`: V8 takes either spelling of a flag's name. */
function flagName(arg) {
  const eq = arg.indexOf('=');
  return (eq === -1 ? arg : arg.slice(0, eq)).replaceAll('_', '-');
}

/** The words of NODE_OPTIONS, near enough to find a flag's name in (node also takes quoted words). */
function nodeOptionsWords(nodeOptions) {
  return (nodeOptions ?? '')
    .split(/\s+/)
    .map((word) => word.replaceAll('"', ''))
    .filter((word) => word !== '');
}

/**
 * The settings not in effect in a process with this environment and these node flags, which the launcher
 * must add. A setting the user gave in any form and with any value is theirs: a variable set (even empty),
 * glibc's own tunable for the arenas, a flag in the command line or in NODE_OPTIONS.
 */
export function missingLaunchSettings(env, execArgv) {
  const missingEnv = {};
  for (const [key, value] of Object.entries(LAUNCH_ENV)) {
    if (env[key] !== undefined) continue;
    if (key === 'MALLOC_ARENA_MAX' && /(^|:)glibc\.malloc\.arena_max=/.test(env['GLIBC_TUNABLES'] ?? ''))
      continue;
    missingEnv[key] = value;
  }
  const given = new Set([...execArgv, ...nodeOptionsWords(env['NODE_OPTIONS'])].map(flagName));
  const missingNodeArgs = LAUNCH_NODE_ARGS.filter((arg) => !given.has(flagName(arg)));
  return { env: missingEnv, nodeArgs: missingNodeArgs };
}
