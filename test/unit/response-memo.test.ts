import t from 'tap';
import { ResponseMemo } from '../../src/api/response-memo.ts';

const answer = (text: string, holds = () => true) => ({ json: Buffer.from(text), holds });

t.test('requests that differ in any part never share a key', (t) => {
  const memo = new ResponseMemo();
  const keys = [
    memo.key('post', '/a', '', 'Bearer k', Buffer.from('{}')),
    memo.key('get', '/a', '', 'Bearer k', Buffer.from('{}')),
    memo.key('post', '/b', '', 'Bearer k', Buffer.from('{}')),
    memo.key('post', '/a', 'x=1', 'Bearer k', Buffer.from('{}')),
    memo.key('post', '/a', '', 'Bearer j', Buffer.from('{}')),
    memo.key('post', '/a', '', 'Bearer k', Buffer.from('{ }')),
    memo.key('post', '/a', '', 'Bearer k', undefined),
    // The same characters, cut into parts differently.
    memo.key('post', '/a1:', '', 'Bearer k', undefined),
    memo.key('post', '/a', '1:', 'Bearer k', undefined),
    memo.key('post', '/a', '', '1:Bearer k', undefined),
  ];
  t.equal(new Set(keys).size, keys.length);
  t.equal(
    memo.key('post', '/a', '', 'k', Buffer.from([0xff, 0x00, 0x80])),
    memo.key('post', '/a', '', 'k', Buffer.from([0xff, 0x00, 0x80])),
    'bytes of any value make the same key each time',
  );
  t.not(
    memo.key('post', '/a', '', 'k', Buffer.from([0xc3, 0xa9])),
    memo.key('post', '/a', '', 'k', Buffer.from([0xe9])),
    'one byte is one character: UTF-8 é and latin1 é differ',
  );
  t.end();
});

t.test('an answer is sent again only while it holds; one that stops holding is forgotten', (t) => {
  const memo = new ResponseMemo();
  let holds = true;
  memo.set(
    'k',
    answer('A', () => holds),
  );
  t.equal(memo.get('k')?.toString(), 'A');
  holds = false;
  t.equal(memo.get('k'), undefined);
  t.equal(memo.size, 0, 'forgotten');
  holds = true;
  t.equal(memo.get('k'), undefined, 'and stays forgotten');
  t.end();
});

t.test('bounded: the oldest entry goes first; a request too long is not remembered', (t) => {
  const memo = new ResponseMemo({ maxEntries: 2, maxKeyLength: 20 });
  memo.set('a', answer('A'));
  memo.set('b', answer('B'));
  memo.set('a', answer('A2'));
  t.equal(memo.size, 2, 'a set again takes no more room');
  memo.set('c', answer('C'));
  t.same(
    ['a', 'b', 'c'].map((k) => memo.get(k)?.toString()),
    ['A2', undefined, 'C'],
    'a set again counts as new',
  );
  t.type(memo.key('get', '/a', '', 'k', undefined), 'string', 'a request of 13 characters has a key');
  t.type(memo.key('post', '/a', '', 'k', Buffer.alloc(6)), 'string', 'and of 20');
  t.equal(memo.key('post', '/a', '', 'k', Buffer.alloc(7)), undefined, 'one of 21 has none');
  t.end();
});

t.test('bounded in bytes: old answers go to make room; one over an eighth of the bound is not kept', (t) => {
  const memo = new ResponseMemo({ maxBytes: 80 });
  memo.set('a', answer('a'.repeat(10)));
  memo.set('b', answer('b'.repeat(10)));
  memo.set('a', answer('A'.repeat(8)));
  t.equal(memo.bytes, 18, 'an answer set again replaces its bytes');
  t.equal(memo.get('a')?.toString(), 'AAAAAAAA');
  for (const k of ['c', 'd', 'e', 'f', 'g', 'h', 'i']) memo.set(k, answer(k.repeat(10)));
  t.ok(memo.bytes <= 80);
  t.equal(memo.get('b'), undefined, 'the oldest went first');
  t.equal(memo.get('h')?.toString(), 'hhhhhhhhhh');
  memo.set('big', answer('x'.repeat(11)));
  t.equal(memo.get('big'), undefined);
  let holds = true;
  memo.set(
    'gone',
    answer('z'.repeat(10), () => holds),
  );
  const before = memo.bytes;
  holds = false;
  t.equal(memo.get('gone'), undefined);
  t.equal(memo.bytes, before - 10, 'an answer that stopped holding gives its bytes back');
  t.end();
});
