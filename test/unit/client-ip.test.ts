import t from 'tap';
import { ClientAddresses, parseTrustedProxies, plainAddress } from '../../src/core/client-ip.ts';

const LOOPBACK = new ClientAddresses(['127.0.0.0/8', '::1']);

t.test('a peer that is not a trusted proxy is the client, whatever its headers say', (t) => {
  t.equal(LOOPBACK.clientIp('203.0.113.7', '', '198.51.100.1'), '203.0.113.7');
  t.equal(LOOPBACK.clientIp('203.0.113.7', 'for=198.51.100.1', ''), '203.0.113.7');
  t.equal(new ClientAddresses([]).clientIp('127.0.0.1', '', '198.51.100.1'), '127.0.0.1', 'none trusted');
  t.end();
});

t.test('behind trusted proxies, the nearest address that is not one', (t) => {
  t.equal(LOOPBACK.clientIp('127.0.0.1', '', '198.51.100.1'), '198.51.100.1');
  t.equal(LOOPBACK.clientIp('::1', '', '198.51.100.1, 127.0.0.2'), '198.51.100.1', 'a second local hop');
  // The leftmost entry is the client's own claim: a client can prepend anything, so it is not believed.
  t.equal(LOOPBACK.clientIp('127.0.0.1', '', '10.9.9.9, 198.51.100.1'), '198.51.100.1');
  const lan = new ClientAddresses(['10.0.0.0/8', '127.0.0.1']);
  t.equal(lan.clientIp('10.1.2.3', '', '198.51.100.1, 10.0.0.5'), '198.51.100.1');
  t.equal(lan.clientIp('10.1.2.3', '', '10.0.0.9, 10.0.0.5'), '10.0.0.9', 'every hop trusted: the farthest');
  t.equal(lan.clientIp('10.1.2.3', '', ''), '10.1.2.3', 'no header: the proxy itself');
  t.end();
});

t.test('Forwarded (RFC 7239) is read before X-Forwarded-For', (t) => {
  t.equal(
    LOOPBACK.clientIp('127.0.0.1', 'for=192.0.2.60;proto=http;by=203.0.113.43', '198.51.100.1'),
    '192.0.2.60',
  );
  t.equal(LOOPBACK.clientIp('127.0.0.1', 'for="[2001:DB8:cafe::17]:4711"', ''), '2001:db8:cafe::17');
  t.equal(LOOPBACK.clientIp('127.0.0.1', 'for=192.0.2.43, for=127.0.0.5', ''), '192.0.2.43');
  t.equal(LOOPBACK.clientIp('127.0.0.1', 'for=unknown', ''), '127.0.0.1', 'an unknown hop ends the walk');
  t.equal(LOOPBACK.clientIp('127.0.0.1', 'for=_hidden, for=192.0.2.1', ''), '192.0.2.1');
  t.end();
});

t.test('addresses are stored plain', (t) => {
  t.equal(plainAddress('::ffff:192.0.2.1'), '192.0.2.1', 'IPv4-mapped IPv6');
  t.equal(plainAddress('192.0.2.1:8080'), '192.0.2.1', 'a port');
  t.equal(plainAddress('[2001:db8::1]:443'), '2001:db8::1');
  t.equal(plainAddress('2001:DB8::1'), '2001:db8::1');
  t.equal(plainAddress('0000:0000:0000:0000:0000:ffff:7f00:0001'), '127.0.0.1', 'as uWS writes a v4 peer');
  t.equal(plainAddress('0000:0000:0000:0000:0000:0000:0000:0001'), '::1', 'as uWS writes ::1');
  t.equal(plainAddress('2001:0db8:0000:0000:0001:0000:0000:0001'), '2001:db8::1:0:0:1', 'RFC 5952');
  t.equal(plainAddress('fe80::1%eth0'), 'fe80::1', 'a zone');
  t.equal(LOOPBACK.clientIp('0000:0000:0000:0000:0000:ffff:7f00:0001', '', '198.51.100.1'), '198.51.100.1');
  t.equal(LOOPBACK.clientIp('::ffff:127.0.0.1', '', '::ffff:198.51.100.1'), '198.51.100.1');
  t.end();
});

t.test('a list of trusted proxies: CIDRs and addresses, none, and a clear refusal', (t) => {
  t.same(parseTrustedProxies('10.0.0.0/8, 192.168.1.1,fd00::/8'), ['10.0.0.0/8', '192.168.1.1', 'fd00::/8']);
  t.same(parseTrustedProxies('none'), []);
  t.throws(() => parseTrustedProxies('10.0.0.0/33'), /no prefix length of 0 to 32/);
  t.throws(() => parseTrustedProxies('proxy.local'), /'proxy.local' is not an IP address/);
  t.end();
});
