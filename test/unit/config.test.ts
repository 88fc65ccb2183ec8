import { readFileSync } from 'node:fs';
import t from 'tap';
import { ConfigError, describeOptions, loadConfig } from '../../src/config/config.ts';

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

t.test('a command may replace defaults; environment and flags still win', (t) => {
  t.equal(loadConfig({}, {}, { port: 8001 }).port, 8001, 'weir ingest listens on 8001 by default');
  t.equal(loadConfig({ WEIR_PORT: '9000' }, {}, { port: 8001 }).port, 9000);
  t.equal(loadConfig({}, { port: '9100' }, { port: 8001 }).port, 9100);
  t.end();
});

t.test('the bus ack wait is a setting and a flag, at least a second', (t) => {
  t.equal(loadConfig({}).busAckWaitMs, 30_000);
  t.equal(loadConfig({ WEIR_BUS_ACK_WAIT_MS: '5000' }).busAckWaitMs, 5000);
  t.equal(loadConfig({}, { 'bus-ack-wait-ms': '2000' }).busAckWaitMs, 2000);
  t.throws(() => loadConfig({ WEIR_BUS_ACK_WAIT_MS: '10' }), /between 1000 and/);
  t.end();
});

t.test('every setting has a row in the configuration table of docs/configuration.md', (t) => {
  const readme = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const rows = readme.split('\n').filter((l) => l.startsWith('| `WEIR_'));
  for (const o of describeOptions()) {
    const row = rows.find((r) => r.includes(`\`${o.env}\``));
    t.ok(row, `${o.env} is documented`);
    if (row && o.flag) t.match(row, `\`--${o.flag}\``, `${o.env} row names --${o.flag}`);
  }
  t.end();
});
