/** The pure parts of the KV compare-and-set (src/kv/): nats-server versions, and which condition writes take. */
import t from 'tap';
import { bucketWideFor, compareVersions, perRecordConditionHolds } from '../../src/kv/cas-bucket.ts';

t.test('versions compare by their numbers', (t) => {
  t.ok(compareVersions('2.10.9', '2.10.20') < 0);
  t.ok(compareVersions('v2.11.0', '2.10.23') > 0);
  t.equal(compareVersions('2.10.22', '2.10.22'), 0);
  t.ok(compareVersions('2.9.21', '2.9.20') > 0);
  t.ok(compareVersions('2.10.0', '2.9.21') > 0, 'by number, not as text');
  t.equal(compareVersions('2.9.21-RC.1', '2.9.21'), 0, 'a pre-release of a version is that version');
  t.ok(compareVersions('', '0.0.1') < 0, 'an unknown version orders first');
  t.ok(compareVersions('garbage', '2.9.21') < 0);
  t.end();
});

t.test('a per-record condition holds on one replica, or from nats-server 2.9.21', (t) => {
  t.ok(perRecordConditionHolds('2.9.10', 1));
  t.ok(perRecordConditionHolds(undefined, 1), 'one replica whatever the server');
  t.notOk(perRecordConditionHolds('2.9.10', 3));
  t.notOk(perRecordConditionHolds('2.9.20', 3));
  t.ok(perRecordConditionHolds('2.9.21', 3));
  t.ok(perRecordConditionHolds('v2.9.21', 3));
  t.ok(perRecordConditionHolds('2.10.1', 3));
  t.ok(perRecordConditionHolds('2.10.27', 5));
  t.ok(perRecordConditionHolds('3.0.0', 3));
  t.notOk(perRecordConditionHolds(undefined, 3), 'an unknown server is taken for an old one');
  t.notOk(perRecordConditionHolds('', 3));
  t.end();
});

t.test('auto takes the bucket-wide condition only where the per-record one does not hold', (t) => {
  t.equal(bucketWideFor('auto', '2.9.10', 3), true, 'an old server, replicated');
  t.equal(bucketWideFor('auto', '2.9.10', 1), false, 'an old server, one replica');
  t.equal(bucketWideFor('auto', '2.10.27', 3), false, 'a fixed server');
  t.equal(bucketWideFor('auto', undefined, 3), true, 'an unknown server, replicated');
  t.equal(bucketWideFor('record', '2.9.10', 3), false, 'told: per record');
  t.equal(bucketWideFor('bucket', '2.10.27', 1), true, 'told: bucket-wide');
  t.end();
});
