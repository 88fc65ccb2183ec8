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

t.test('the shared catalog, the store API and the NATS servers are settings, checked', (t) => {
  const d = loadConfig({});
  t.equal(d.catalog, 'file', 'the embedded default keeps catalog.json');
  t.equal(loadConfig({ WEIR_NATS_URL: 'nats://n:4222' }).catalog, 'nats', 'with NATS, the shared one');
  t.equal(
    loadConfig({ WEIR_NATS_URL: 'nats://n:4222', WEIR_CATALOG: 'file' }).catalog,
    'file',
    'unless told otherwise',
  );
  t.equal(d.catalogBucket, 'weir_catalog');
  t.equal(d.natsReplicas, undefined, 'replicas follow the cluster unless set');
  t.equal(d.storeUrl, undefined);
  t.equal(d.storeToken, undefined);
  const c = loadConfig(
    {
      WEIR_CATALOG_BUCKET: 'team_a',
      WEIR_NATS_REPLICAS: '3',
      WEIR_STORE_TOKEN: 'a-long-enough-secret',
    },
    { catalog: 'nats', 'store-url': 'http://ingest:8001' },
  );
  t.equal(c.catalog, 'nats');
  t.equal(c.catalogBucket, 'team_a');
  t.equal(c.natsReplicas, 3);
  t.equal(c.storeUrl, 'http://ingest:8001');
  t.equal(c.storeToken, 'a-long-enough-secret');
  t.throws(() => loadConfig({ WEIR_CATALOG: 'redis' }), /WEIR_CATALOG must be one of file, nats/);
  t.throws(() => loadConfig({ WEIR_CATALOG_BUCKET: 'a.b' }), /NATS KV bucket name/);
  t.throws(() => loadConfig({ WEIR_NATS_REPLICAS: '7' }), /between 1 and 5/);
  t.throws(() => loadConfig({ WEIR_STORE_URL: 'ingest:8001' }), /http or https URL|must be a URL/);
  const short = t.throws(() => loadConfig({ WEIR_STORE_TOKEN: 'short-secret' })) as Error;
  t.match(short.message, /at least 16 characters/);
  t.notMatch(short.message, /short-secret/, 'a secret is never echoed');
  t.end();
});

t.test('trusted proxies: loopback by default, CIDRs checked, none for no proxy', (t) => {
  t.same(loadConfig({}).trustedProxies, ['127.0.0.0/8', '::1']);
  t.same(loadConfig({ WEIR_TRUSTED_PROXIES: '10.0.0.0/8, fd00::/8' }).trustedProxies, [
    '10.0.0.0/8',
    'fd00::/8',
  ]);
  t.same(loadConfig({ WEIR_TRUSTED_PROXIES: 'none' }).trustedProxies, []);
  t.throws(
    () => loadConfig({ WEIR_TRUSTED_PROXIES: '10.0.0.0/40' }),
    /WEIR_TRUSTED_PROXIES: '10.0.0.0\/40' has no prefix length/,
  );
  t.end();
});

t.test('GeoIP: off by default, on with a database, and never both off and given one', (t) => {
  t.equal(loadConfig({}).geoip, false);
  t.equal(loadConfig({ WEIR_GEOIP: 'on' }).geoipDb, undefined, 'on: the npm package');
  const withDb = loadConfig({ WEIR_GEOIP_DB: 'GeoLite2-City.mmdb' });
  t.equal(withDb.geoip, true, 'a database turns it on');
  t.match(withDb.geoipDb, /^\/.*GeoLite2-City\.mmdb$/, 'resolved to an absolute path');
  t.throws(() => loadConfig({ WEIR_GEOIP: 'off', WEIR_GEOIP_DB: 'x.mmdb' }), /WEIR_GEOIP is off/);
  t.end();
});
