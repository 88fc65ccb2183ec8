import t from 'tap';
import type { NatsConnection } from '@nats-io/transport-node';
import { natsServers, replicasFor } from '../../src/bus/jetstream/connection.ts';

const connectedTo = (info: Record<string, unknown> | undefined): NatsConnection =>
  ({ info }) as unknown as NatsConnection;

t.test('WEIR_NATS_URL is a comma-separated list of servers', (t) => {
  t.same(natsServers('nats://a:4222'), ['nats://a:4222']);
  t.same(natsServers(' nats://a:4222, nats://b:4222 ,,nats://c:4222 '), [
    'nats://a:4222',
    'nats://b:4222',
    'nats://c:4222',
  ]);
  t.end();
});

t.test('replicas: as configured, else 3 in a cluster of three or more, else 1', (t) => {
  t.equal(replicasFor(connectedTo(undefined), undefined), 1, 'nothing known');
  t.equal(replicasFor(connectedTo({ connect_urls: ['a', 'b', 'c'] }), undefined), 1, 'no cluster name');
  t.equal(replicasFor(connectedTo({ cluster: 'c', connect_urls: ['a', 'b'] }), undefined), 1, 'two servers');
  t.equal(replicasFor(connectedTo({ cluster: 'c', connect_urls: ['a', 'b', 'c'] }), undefined), 3);
  t.equal(replicasFor(connectedTo({ cluster: 'c', connect_urls: ['a', 'b', 'c', 'd', 'e'] }), undefined), 3);
  t.equal(replicasFor(connectedTo({ cluster: 'c', connect_urls: ['a', 'b', 'c'] }), 1), 1, 'configured wins');
  t.equal(replicasFor(connectedTo(undefined), 5), 5);
  t.end();
});
