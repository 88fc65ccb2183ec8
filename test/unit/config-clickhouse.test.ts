import t from 'tap';
import { loadConfig } from '../../src/config/config.ts';

t.test('without WEIR_CLICKHOUSE_URL the store is the embedded one, and its settings are refused', (t) => {
  const c = loadConfig({});
  t.equal(c.clickhouseUrl, undefined);
  t.equal(c.clickhouseUser, 'default');
  t.equal(c.clickhouseDatabase, 'default');
  t.throws(
    () => loadConfig({ WEIR_CLICKHOUSE_CLUSTER: 'c', WEIR_CLICKHOUSE_PASSWORD: 'x' }),
    /WEIR_CLICKHOUSE_PASSWORD is set without WEIR_CLICKHOUSE_URL; .*WEIR_CLICKHOUSE_CLUSTER is set without/,
  );
  t.end();
});

t.test('the server store: URL from the environment or the flag, user, password, database, cluster', (t) => {
  const c = loadConfig(
    {
      WEIR_CLICKHOUSE_USER: 'weir',
      WEIR_CLICKHOUSE_PASSWORD: '',
      WEIR_CLICKHOUSE_DATABASE: 'analytics',
      WEIR_CLICKHOUSE_CLUSTER: 'prod-1',
    },
    { 'clickhouse-url': 'https://ch.example:8443' },
  );
  t.match(c, {
    clickhouseUrl: 'https://ch.example:8443',
    clickhouseUser: 'weir',
    clickhousePassword: '',
    clickhouseDatabase: 'analytics',
    clickhouseCluster: 'prod-1',
  });
  t.throws(() => loadConfig({ WEIR_CLICKHOUSE_URL: 'tcp://ch:9000' }), /http or https URL/);
  t.throws(
    () => loadConfig({ WEIR_CLICKHOUSE_URL: 'http://ch:8123', WEIR_CLICKHOUSE_DATABASE: 'a-b' }),
    /WEIR_CLICKHOUSE_DATABASE must be letters, digits and _/,
  );
  t.throws(
    () => loadConfig({ WEIR_CLICKHOUSE_URL: 'http://ch:8123', WEIR_CLICKHOUSE_CLUSTER: "x' OR 1" }),
    /WEIR_CLICKHOUSE_CLUSTER must be letters/,
  );
  t.end();
});

t.test(
  'credentials in WEIR_CLICKHOUSE_URL are taken out of it; a password on the command line is refused',
  (t) => {
    const c = loadConfig({ WEIR_CLICKHOUSE_URL: 'http://weir:s%40cret@ch:8123' });
    t.match(c, { clickhouseUrl: 'http://ch:8123', clickhouseUser: 'weir', clickhousePassword: 's@cret' });
    t.throws(
      () => loadConfig({}, { 'clickhouse-url': 'http://weir:secret@ch:8123' }),
      /--clickhouse-url must not carry a password/,
    );
    t.equal(
      loadConfig({}, { 'clickhouse-url': 'http://weir@ch:8123' }).clickhouseUser,
      'weir',
      'a user alone may',
    );
    t.throws(
      () => loadConfig({ WEIR_CLICKHOUSE_URL: 'http://weir:pw@ch:8123', WEIR_CLICKHOUSE_PASSWORD: 'other' }),
      /carries credentials, and WEIR_CLICKHOUSE_USER or _PASSWORD too/,
    );
    t.end();
  },
);
