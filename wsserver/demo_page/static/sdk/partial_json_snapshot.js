/**
 * The provisional value of a partial JSON document: a copy of the parser's containers.
 * @packageDocumentation
 */
/** "No value here yet" (`null` is a real JSON value). */
export const MISSING = Symbol("missing");
/** Set a member without invoking a `__proto__` setter (JSON.parse makes it an own key). */
export function setMember(object, key, value) {
    if (key === "__proto__")
        Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
    else
        object[key] = value;
}
/**
 * Deep-copy the containers of `root`, adding `leaf` to the copy of `tip`: a copy so that
 * callers may change what they get; iterative, so deep nesting cannot exhaust the stack.
 */
export function snapshot(root, tip, key, leaf) {
    if (root === null || typeof root !== "object")
        return root;
    const out = emptyLike(root);
    const work = [[root, out]];
    for (let pair = work.pop(); pair !== undefined; pair = work.pop()) {
        const [src, dst] = pair;
        if (Array.isArray(src)) {
            for (const item of src)
                dst.push(copyChild(item, work));
        }
        else {
            for (const name of Object.keys(src))
                setMember(dst, name, copyChild(src[name], work));
        }
        if (src === tip && leaf !== MISSING) {
            if (Array.isArray(dst))
                dst.push(leaf);
            else
                setMember(dst, key, leaf);
        }
    }
    return out;
}
function emptyLike(container) {
    return Array.isArray(container) ? [] : {};
}
function copyChild(item, work) {
    if (item === null || typeof item !== "object")
        return item;
    const copy = emptyLike(item);
    work.push([item, copy]);
    return copy;
}
