/**
 * The provisional value of a partial JSON document: a copy of the parser's containers.
 * @packageDocumentation
 */

import type { JsonValue } from "./events.js";

/** An open object or array of the parser. */
export type Container = JsonValue[] | { [key: string]: JsonValue };

/** "No value here yet" (`null` is a real JSON value). */
export const MISSING: unique symbol = Symbol("missing");

/** A scalar being read, or {@link MISSING}. */
export type Leaf = JsonValue | typeof MISSING;

/** Set a member without invoking a `__proto__` setter (JSON.parse makes it an own key). */
export function setMember(object: { [key: string]: JsonValue }, key: string, value: JsonValue): void {
  if (key === "__proto__") Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  else object[key] = value;
}

/**
 * Deep-copy the containers of `root`, adding `leaf` to the copy of `tip`: a copy so that
 * callers may change what they get; iterative, so deep nesting cannot exhaust the stack.
 */
export function snapshot(root: JsonValue, tip: Container | undefined, key: string, leaf: Leaf): JsonValue {
  if (root === null || typeof root !== "object") return root;
  const out = emptyLike(root);
  const work: Array<readonly [Container, Container]> = [[root, out]];
  for (let pair = work.pop(); pair !== undefined; pair = work.pop()) {
    const [src, dst] = pair;
    if (Array.isArray(src)) {
      for (const item of src) (dst as JsonValue[]).push(copyChild(item, work));
    } else {
      for (const name of Object.keys(src)) setMember(dst as { [key: string]: JsonValue }, name, copyChild(src[name] as JsonValue, work));
    }
    if (src === tip && leaf !== MISSING) {
      if (Array.isArray(dst)) dst.push(leaf);
      else setMember(dst, key, leaf);
    }
  }
  return out;
}

function emptyLike(container: Container): Container {
  return Array.isArray(container) ? [] : {};
}

function copyChild(item: JsonValue, work: Array<readonly [Container, Container]>): JsonValue {
  if (item === null || typeof item !== "object") return item;
  const copy = emptyLike(item);
  work.push([item, copy]);
  return copy;
}
