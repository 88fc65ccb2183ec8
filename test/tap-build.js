// Rebuilds tap's test class when the plugins it was built with differ from package.json's "tap" section, before
// `tap` runs. tap rebuilds by itself in that case, but the run that rebuilds still starts every test file with
// the old plugins' loaders: ts-node beside tsx, which costs each file twice its start-up. After a fresh
// `npm install` (every CI run) the built class is tap's default, so without this the whole suite pays that.
// Arguments are tap's (`--plugin=…`), for a run whose plugins differ from the section's (`npm run coverage`).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { TapConfig } from '@tapjs/config';
import { signature } from '@tapjs/test';

const config = await TapConfig.load();
if (config.pluginSignature !== signature) {
  const tap = createRequire(import.meta.url)
    .resolve('tap/package.json')
    .replace(/package\.json$/, '');
  execFileSync(process.execPath, [`${tap}dist/esm/run.mjs`, 'build', ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
}
