import { isIP } from 'node:net';

/**
 * A minimal MaxMind DB writer for tests, after the public format spec (MaxMind DB File Format 2.0): a binary
 * search tree of 24-bit records, a 16-byte zero separator, a data section without pointers, then the
 * metadata marker and map. It writes what the readers under test must read — MaxMind's own schema with
 * records we choose, and databases of other types to be refused — where no writer is on the npm registry.
 * Networks must not overlap.
 */
export type MmdbValue =
  string | number | boolean | readonly MmdbValue[] | { readonly [key: string]: MmdbValue };

export interface MmdbOptions {
  readonly databaseType: string;
  /** An IPv6 tree holds IPv4 networks at ::/96, as MaxMind's files do. @default 6 */
  readonly ipVersion?: 4 | 6;
  readonly languages?: readonly string[];
  readonly description?: Readonly<Record<string, string>>;
  /** @default 2026-01-01 */
  readonly buildEpochSeconds?: number;
}

/** One network (`1.2.3.0/24`, `2001:db8::/32`) and the record an address in it finds. */
export interface MmdbNetwork {
  readonly network: string;
  readonly record: MmdbValue;
}

const METADATA_MARKER = Buffer.from('\xAB\xCD\xEFMaxMind.com', 'latin1');
const RECORD_BYTES = 3; // 24-bit records: one node is six bytes
const MAX_RECORD = 2 ** (8 * RECORD_BYTES);

interface TreeNode {
  children: [Child, Child];
}
type Child = TreeNode | { readonly data: number } | undefined;

export function writeMmdb(options: MmdbOptions, networks: readonly MmdbNetwork[]): Buffer {
  const ipVersion = options.ipVersion ?? 6;
  const data = new DataSection();
  const root: TreeNode = { children: [undefined, undefined] };
  for (const { network, record } of networks) insert(root, networkBits(network, ipVersion), data.add(record));

  const nodes = numberNodes(root);
  const nodeCount = nodes.length;
  const tree = Buffer.alloc(nodeCount * 2 * RECORD_BYTES);
  const index = new Map(nodes.map((node, i) => [node, i]));
  nodes.forEach((node, i) => {
    node.children.forEach((child, side) => {
      let value = nodeCount; // no data for this network
      if (child !== undefined && 'children' in child) value = index.get(child)!;
      else if (child !== undefined) value = nodeCount + 16 + child.data;
      if (value >= MAX_RECORD) throw new Error('too large for 24-bit records');
      tree.writeUIntBE(value, (i * 2 + side) * RECORD_BYTES, RECORD_BYTES);
    });
  });

  const metadata = new DataSection();
  metadata.add({
    node_count: nodeCount,
    record_size: RECORD_BYTES * 8,
    ip_version: ipVersion,
    database_type: options.databaseType,
    languages: options.languages ?? ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: options.buildEpochSeconds ?? Date.UTC(2026, 0, 1) / 1000,
    description: options.description ?? { en: `${options.databaseType} written by a test` },
  });
  return Buffer.concat([tree, Buffer.alloc(16), data.bytes(), METADATA_MARKER, metadata.bytes()]);
}

function insert(root: TreeNode, bits: readonly number[], data: number): void {
  let node = root;
  for (let depth = 0; depth < bits.length - 1; depth++) {
    const bit = bits[depth]!;
    let next = node.children[bit];
    if (next === undefined) {
      next = { children: [undefined, undefined] };
      node.children[bit] = next;
    }
    if (!('children' in next)) throw new Error('overlapping networks');
    node = next;
  }
  node.children[bits[bits.length - 1]!] = { data };
}

/** Breadth first, root first: the root must be node 0, the rest may be in any order. */
function numberNodes(root: TreeNode): TreeNode[] {
  const nodes = [root];
  for (let i = 0; i < nodes.length; i++) {
    for (const child of nodes[i]!.children) if (child !== undefined && 'children' in child) nodes.push(child);
  }
  return nodes;
}

function networkBits(network: string, ipVersion: 4 | 6): number[] {
  const [address = '', prefixText] = network.split('/');
  const version = isIP(address);
  if (version === 0) throw new Error(`not a network: ${network}`);
  if (version === 6 && ipVersion === 4) throw new Error(`an IPv4 tree cannot hold ${network}`);
  const bytes = version === 4 ? address.split('.').map(Number) : ipv6Bytes(address);
  const prefix = prefixText === undefined ? bytes.length * 8 : Number(prefixText);
  if (prefix < 1 || prefix > bytes.length * 8) throw new Error(`bad prefix: ${network}`);
  const bits: number[] = version === 4 && ipVersion === 6 ? new Array<number>(96).fill(0) : [];
  for (let i = 0; i < prefix; i++) bits.push((bytes[i >> 3]! >> (7 - (i & 7))) & 1);
  return bits;
}

function ipv6Bytes(address: string): number[] {
  const [head = '', tail] = address.split('::');
  const groups = (text: string): number[] => (text === '' ? [] : text.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** The data section's encoding: a control byte (type, size), then the payload; one copy of each record. */
class DataSection {
  readonly #chunks: Buffer[] = [];
  #length = 0;
  readonly #offsets = new Map<string, number>();

  /** The record's offset in the section. */
  add(value: MmdbValue): number {
    const key = JSON.stringify(value);
    const known = this.#offsets.get(key);
    if (known !== undefined) return known;
    const offset = this.#length;
    this.#offsets.set(key, offset);
    this.#write(value);
    return offset;
  }

  bytes(): Buffer {
    return Buffer.concat(this.#chunks);
  }

  #push(bytes: Buffer): void {
    this.#chunks.push(bytes);
    this.#length += bytes.length;
  }

  #write(value: MmdbValue): void {
    if (typeof value === 'string') {
      const utf8 = Buffer.from(value, 'utf8');
      this.#control(2, utf8.length);
      this.#push(utf8);
    } else if (typeof value === 'boolean') {
      this.#control(14, value ? 1 : 0);
    } else if (typeof value === 'number') {
      this.#number(value);
    } else if (Array.isArray(value)) {
      const items = value as readonly MmdbValue[];
      this.#control(11, items.length);
      for (const item of items) this.#write(item);
    } else {
      const entries = Object.entries(value as { readonly [key: string]: MmdbValue });
      this.#control(7, entries.length);
      for (const [key, item] of entries) {
        this.#write(key);
        this.#write(item);
      }
    }
  }

  /** Whole numbers as the smallest unsigned type (uint64 for a build epoch), everything else as a double. */
  #number(value: number): void {
    if (Number.isInteger(value) && value >= 0 && value < 2 ** 32) {
      const type = value < 2 ** 16 ? 5 : 6;
      const bytes = uintBytes(value);
      this.#control(type, bytes.length);
      this.#push(bytes);
    } else if (Number.isSafeInteger(value) && value >= 0) {
      const bytes = Buffer.alloc(8);
      bytes.writeBigUInt64BE(BigInt(value));
      this.#control(9, 8);
      this.#push(bytes);
    } else {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleBE(value);
      this.#control(3, 8);
      this.#push(bytes);
    }
  }

  /** Types past 7 are "extended": type 0 in the control byte, the type less 7 in the next byte. */
  #control(type: number, size: number): void {
    let sizeBits = size;
    let extra: Buffer = Buffer.alloc(0);
    if (size >= 65_821) [sizeBits, extra] = [31, uintBytes(size - 65_821, 3)];
    else if (size >= 285) [sizeBits, extra] = [30, uintBytes(size - 285, 2)];
    else if (size >= 29) [sizeBits, extra] = [29, uintBytes(size - 29, 1)];
    const control = Buffer.from([((type > 7 ? 0 : type) << 5) | sizeBits]);
    this.#push(Buffer.concat([control, Buffer.from(type > 7 ? [type - 7] : []), extra]));
  }
}

function uintBytes(value: number, width?: number): Buffer {
  const bytes: number[] = [];
  for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  while (width !== undefined && bytes.length < width) bytes.unshift(0);
  return Buffer.from(bytes);
}
