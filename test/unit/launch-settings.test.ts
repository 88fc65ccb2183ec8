import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import {
  LAUNCH_ENV,
  LAUNCH_NODE_ARGS,
  launchSettingsWanted,
  missingLaunchSettings,
} from '../../bin/launch-settings.js';
import { REPO_ROOT } from '../../bench/capture/child-processes.ts';
import {
  WEIR_LAUNCH_ENV,
  WEIR_LAUNCH_NODE_ARGS,
  benchWeirEnv,
  benchWeirNodeArgs,
} from '../../bench/capture/targets.ts';
import { loadConfig } from '../../src/config/config.ts';

// The soak measured memory with these settings; a launcher that drops one runs a Weir nobody measured.
t.test('npm start, the Docker image and the benches run Weir with the settings of the launcher', (t) => {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    bin: Record<string, string>;
    scripts: Record<string, string>;
  };
  t.equal(pkg.bin['weir'], 'bin/weir.js', '`npx weir` is the launcher');
  t.equal(pkg.scripts['start'], 'node bin/weir.js start', '`npm start` is `npx weir start`');
  const dockerfile = readFileSync(join(REPO_ROOT, 'deploy/Dockerfile'), 'utf8');
  t.match(dockerfile, /^ENTRYPOINT \["node", "bin\/weir\.js"\]$/m, 'the image runs the launcher');
  const imageEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(LAUNCH_ENV)) {
    t.match(dockerfile, new RegExp(`ENV[^\\n]*\\b${key}=${value}\\b`), `the image sets ${key}`);
    imageEnv[key] = value;
  }
  for (const arg of LAUNCH_NODE_ARGS)
    t.match(dockerfile, new RegExp(`NODE_OPTIONS=${arg}\\b`), `the image gives node ${arg}`);
  imageEnv['NODE_OPTIONS'] = LAUNCH_NODE_ARGS.join(' ');
  t.same(
    missingLaunchSettings(imageEnv, []),
    { env: {}, nodeArgs: [] },
    'in the image the launcher has nothing to add, so node starts once',
  );
  t.equal(WEIR_LAUNCH_ENV, LAUNCH_ENV, 'the benches read the environment of the launcher');
  t.equal(WEIR_LAUNCH_NODE_ARGS, LAUNCH_NODE_ARGS, 'and its node flags');
  t.match(benchWeirEnv(), LAUNCH_ENV, 'benches start Weir with the same environment');
  t.same(benchWeirNodeArgs().slice(0, LAUNCH_NODE_ARGS.length), LAUNCH_NODE_ARGS);
  t.end();
});

t.test('the launcher adds only the settings not in effect, and keeps the ones a user gave', (t) => {
  const all = { env: { ...LAUNCH_ENV }, nodeArgs: [...LAUNCH_NODE_ARGS] };
  t.same(missingLaunchSettings({}, []), all, 'none given: all of them');
  t.same(missingLaunchSettings({ MALLOC_ARENA_MAX: '8' }, []).env, {}, 'another arena count is kept');
  t.same(
    missingLaunchSettings({ MALLOC_ARENA_MAX: '' }, []).env,
    {},
    'so is an empty one (the default of glibc)',
  );
  t.same(
    missingLaunchSettings({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4' }, []).env,
    {},
    'the glibc tunable for the arenas counts as the variable',
  );
  t.same(
    missingLaunchSettings({ GLIBC_TUNABLES: 'glibc.malloc.tcache_count=0' }, []).env,
    LAUNCH_ENV,
    'another tunable does not',
  );
  const flagGiven = (env: Record<string, string>, execArgv: string[]): string[] =>
    missingLaunchSettings(env, execArgv).nodeArgs;
  t.same(flagGiven({}, ['--max-semi-space-size=16']), [], 'a semi-space on the command line is kept');
  t.same(flagGiven({}, ['--max_semi_space_size', '16']), [], 'in either spelling, its value apart');
  t.same(flagGiven({ NODE_OPTIONS: '--inspect  --max-semi-space-size=32' }, []), [], 'or in NODE_OPTIONS');
  t.same(flagGiven({ NODE_OPTIONS: '"--max-semi-space-size=32"' }, []), [], 'quoted there');
  t.same(
    flagGiven({ NODE_OPTIONS: '--max-old-space-size=4096' }, ['--max-semi-space-size-x=1']),
    LAUNCH_NODE_ARGS,
    'other flags do not count',
  );
  t.end();
});

t.test('WEIR_LAUNCH_SETTINGS turns them off, in the words config takes for a boolean', (t) => {
  t.equal(launchSettingsWanted({}), true, 'unset: on');
  for (const word of ['1', 'true', 'yes', 'on', 'TRUE']) {
    t.equal(launchSettingsWanted({ WEIR_LAUNCH_SETTINGS: word }), true, word);
    t.equal(loadConfig({ WEIR_STORE_FSYNC: word }).storeFsync, true, `config reads ${word} the same`);
  }
  for (const word of ['0', 'false', 'no', 'off', ' Off ']) {
    t.equal(launchSettingsWanted({ WEIR_LAUNCH_SETTINGS: word }), false, word);
    t.equal(loadConfig({ WEIR_STORE_FSYNC: word }).storeFsync, false, `config reads ${word} the same`);
  }
  t.throws(
    () => launchSettingsWanted({ WEIR_LAUNCH_SETTINGS: 'of' }),
    /WEIR_LAUNCH_SETTINGS must be true or false, got 'of'/,
    'a typo is refused, not read as either',
  );
  t.end();
});
