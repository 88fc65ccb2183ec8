/**
 * The `elements_chain` of autocapture events, with PostHog's own cases (posthog/models/element's tests, and
 * the `$elements` of an older SDK as its ingestion converts them) recreated: queries match on this string,
 * so it must be byte for byte what PostHog stores.
 */
import t from 'tap';
import {
  chainToElements,
  elementsChain,
  elementsToString,
  extractElements,
} from '../../src/ingest/elements-chain.ts';

t.test("elements_to_string: PostHog's case, quotes and semicolons in values", (t) => {
  const chain = elementsToString([
    {
      tag_name: 'a',
      href: '/a-url',
      attr_class: ['small'],
      text: 'bla bla',
      attributes: {
        prop: 'value',
        number: '33',
        'data-attr': 'something " that; could mess up',
        style: 'min-height: 100vh;',
      },
      nth_child: 1,
      nth_of_type: 0,
    },
    { tag_name: 'button', attr_class: ['btn', 'btn-primary'], nth_child: 0, nth_of_type: 0, attributes: {} },
    { tag_name: 'div', nth_child: 0, nth_of_type: 0, attributes: {} },
    { tag_name: 'div', nth_child: 0, nth_of_type: 0, attr_id: 'nested', attributes: {} },
  ]);
  t.equal(
    chain,
    [
      String.raw`a.small:data-attr="something \" that; could mess up"href="/a-url"nth-child="1"nth-of-type="0"number="33"prop="value"style="min-height: 100vh;"text="bla bla"`,
      'button.btn.btn-primary:nth-child="0"nth-of-type="0"',
      'div:nth-child="0"nth-of-type="0"',
      'div:attr_id="nested"nth-child="0"nth-of-type="0"',
    ].join(';'),
  );

  const elements = chainToElements(chain);
  t.equal(elements.length, 4);
  t.equal(elements[0]!.tag_name, 'a');
  t.equal(elements[0]!.href, '/a-url');
  t.same(elements[0]!.attr_class, ['small']);
  t.same(elements[0]!.attributes, {
    prop: 'value',
    number: '33',
    'data-attr': String.raw`something \" that; could mess up`,
    style: 'min-height: 100vh;',
  });
  t.equal(elements[0]!.nth_child, 1);
  t.equal(elements[0]!.nth_of_type, 0);
  t.same(elements[1]!.attr_class, ['btn', 'btn-primary']);
  t.equal(elements[3]!.attr_id, 'nested');
  t.end();
});

t.test('broken class names: repeated dots, quotes and colons in classes', (t) => {
  const broken = chainToElements('a........small');
  t.equal(broken[0]!.tag_name, 'a');
  t.same(broken[0]!.attr_class, ['small']);

  const chain = elementsToString([
    {
      tag_name: 'a',
      href: '/a-url',
      attr_class: ['small"', 'xy:z'],
      attributes: { attr_class: 'xyz small"' },
    },
  ]);
  t.equal(chain, String.raw`a.small.xy:z:attr_class="xyz small\""href="/a-url"nth-child="0"nth-of-type="0"`);
  const elements = chainToElements(chain);
  t.equal(elements[0]!.tag_name, 'a');
  t.equal(elements[0]!.href, '/a-url');
  t.same(elements[0]!.attr_class, ['small', 'xy:z']);
  t.end();
});

t.test("$elements of an older SDK become PostHog's chain", (t) => {
  // PostHog's own fixture of its ingestion's conversion (a Next.js page's click on an icon in a button).
  const $elements = [
    { tag_name: 'i', attr__class: 'ri-route-fill', nth_child: 1, nth_of_type: 1 },
    {
      tag_name: 'button',
      $el_text: '',
      attr__class: 'chakra-button css-vyn3p3',
      attr__type: 'button',
      nth_child: 1,
      nth_of_type: 1,
    },
    { tag_name: 'div', attr__id: '__next', nth_child: 1, nth_of_type: 1 },
    {
      tag_name: 'body',
      attr__class: 'chakra-ui-light',
      'attr__cz-shortcut-listen': 'true',
      nth_child: 2,
      nth_of_type: 1,
    },
  ];
  t.equal(
    elementsChain({ $elements }),
    [
      'i.ri-route-fill:attr__class="ri-route-fill"nth-child="1"nth-of-type="1"',
      'button.chakra-button.css-vyn3p3:attr__class="chakra-button css-vyn3p3"attr__type="button"nth-child="1"nth-of-type="1"',
      'div:attr__id="__next"attr_id="__next"nth-child="1"nth-of-type="1"',
      'body.chakra-ui-light:attr__class="chakra-ui-light"attr__cz-shortcut-listen="true"nth-child="2"nth-of-type="1"',
    ].join(';'),
  );
  t.end();
});

t.test('text and href are cut as PostHog cuts them; classes may come as a list', (t) => {
  const [el] = extractElements([
    {
      tag_name: 'a',
      $el_text: 'x'.repeat(500),
      attr__href: `/${'p'.repeat(3000)}`,
      attr__class: ['b', 'a'],
      nth_child: '2',
    },
  ]);
  t.equal(el!.text!.length, 400);
  t.equal(el!.href!.length, 2048);
  t.same(el!.attr_class, ['b', 'a']);
  const chain = elementsToString([el!]);
  t.match(
    chain,
    /^a\.a\.b:attr__class="\[\\"b\\",\\"a\\"\]"/,
    'classes sorted; a list attribute written as JSON, its quotes escaped',
  );
  t.match(chain, /nth-child="2"nth-of-type="0"/, 'an nth sent as text kept; a missing one is 0');
  t.end();
});

t.test('$elements_chain when the SDK sent it, as it is', (t) => {
  const sent = 'button.btn:nth-child="1"nth-of-type="1"text="Sign up"';
  t.equal(elementsChain({ $elements_chain: sent, $elements: [{ tag_name: 'a' }] }), sent);
  t.equal(
    elementsChain({ $elements_chain: '', $elements: [{ tag_name: 'a' }] }),
    'a:nth-child="0"nth-of-type="0"',
  );
  t.equal(elementsChain({}), '');
  t.equal(elementsChain({ $elements: [] }), '');
  t.equal(elementsChain({ $elements: 'not a list' }), '');
  t.equal(elementsChain({ $elements: [null, 3, { tag_name: 'p' }] }), 'p:nth-child="0"nth-of-type="0"');
  t.end();
});

t.test('attribute keys and values are sorted by code point and their quotes escaped', (t) => {
  const chain = elementsToString([
    { tag_name: 'div', attributes: { attr__Z: '1', attr__a: 'say "hi"', 'attr__"q': 'x' } },
  ]);
  t.equal(chain, String.raw`div:attr__\"q="x"attr__Z="1"attr__a="say \"hi\""nth-child="0"nth-of-type="0"`);
  t.end();
});

t.test("chain parsing keeps PostHog's reading of edge cases", (t) => {
  const read = (chain: string): [string | undefined, string | undefined][] =>
    chainToElements(chain).map((e) => [e.tag_name, e.text]);
  t.same(read(String.raw`a:text="\"`), [['a', undefined]], 'a value holding only a backslash');
  t.same(read('a:text="x\\\ny"nth-child="1"'), [['a', undefined]], 'a backslash before a newline');
  t.same(
    read(String.raw`a:text="back\";div:nth-child="0"`),
    [['a', String.raw`back\";div:nth-child=`]],
    'a value ending in a backslash swallows what follows',
  );
  t.same(chainToElements(''), []);

  const attributes = (source: string): Record<string, string> =>
    chainToElements(`x:${source}`)[0]?.attributes ?? {};
  t.same(attributes('a="1"b="2"'), { a: '1', b: '2' });
  t.same(attributes('href="/x?b=c"a="1"'), { a: '1' }, 'href promoted out of the attributes');
  t.equal(chainToElements('x:href="/x?b=c"a="1"')[0]!.href, '/x?b=c', 'equals inside a value');
  t.same(attributes('a=b="v"'), { 'a=b': 'v' }, 'equals inside a key');
  t.same(attributes(String.raw`k="a\"b"n="1"`), { k: String.raw`a\"b`, n: '1' });
  t.same(attributes('a=""b="2"'), { a: '"b=' }, 'an empty value runs on to the next quote');
  t.same(attributes('a="1"b="2'), { a: '1' }, 'an unterminated quote');
  t.equal(chainToElements('x:nth-child="oops"')[0]!.nth_child, undefined, 'an nth that is no number');
  t.end();
});
