import t from 'tap';
import { ConfigError, loadConfig } from '../../src/config/config.ts';

t.test('defaults', (t) => {
  const c = loadConfig({});
  t.equal(c.host, '127.0.0.1');
  t.equal(c.port, 8000);
  t.match(c.dataDir, /\/data$/);
  t.equal(c.logLevel, 'info');
  t.equal(c.bootstrapProjectApiKey, undefined);
  t.ok(Object.isFrozen(c));
  t.end();
});

t.test('environment and flags, flags winning', (t) => {
  const c = loadConfig(
    { WEIR_PORT: '9000', WEIR_HOST: '0.0.0.0', WEIR_LOG_LEVEL: 'DEBUG' },
    { port: '9100' },
  );
  t.equal(c.port, 9100);
  t.equal(c.host, '0.0.0.0');
  t.equal(c.logLevel, 'debug');
  t.end();
});

t.test('unknown WEIR_ variables and flags are refused, every problem named', (t) => {
  t.throws(() => loadConfig({ WEIR_PROT: '1' }), ConfigError);
  const err = t.throws(() => loadConfig({ WEIR_PROT: '1', WEIR_PORT: 'abc' }, { nope: 'x' })) as Error;
  t.match(err.message, /unknown setting WEIR_PROT/);
  t.match(err.message, /WEIR_PORT must be a whole number/);
  t.match(err.message, /unknown flag --nope/);
  t.end();
});

t.test('values are validated', (t) => {
  t.throws(() => loadConfig({ WEIR_PORT: '70000' }), /between 0 and 65535/);
  t.throws(() => loadConfig({ WEIR_LOG_LEVEL: 'loud' }), /must be one of/);
  t.throws(() => loadConfig({ WEIR_BOOTSTRAP_PROJECT_API_KEY: '  ' }), /must not be empty/);
  t.doesNotThrow(() => loadConfig({ OTHER_VAR: 'x', PATH: '/bin' }), 'non-WEIR variables are ignored');
  t.end();
});
