"""The shapes of recipe trees, without evaluating them.

Real data code reads shapes (``n = len(X)``, ``rng.normal(size=X.shape)``,
``X.shape[0] // 10``), and the size guard must refuse a recipe whose arrays would be too large
before anything is drawn.  Both need the shape of a tree from the code alone: NumPy's own
shape rules for the allow-listed calls.  None when a shape depends on the values (a boolean
mask) or on a call this module does not model.
"""

from __future__ import annotations

import math

from .recipe_tables import NUMPY_FUNCTIONS, Tree

Shape = tuple[int, ...]


def broadcast(*shapes: Shape | None) -> Shape | None:
    """NumPy's broadcast of several shapes (None when one is unknown or they clash)."""
    known = [s for s in shapes if s is not None]
    if len(known) != len(shapes):
        return None
    rank = max((len(s) for s in known), default=0)
    out = []
    for i in range(1, rank + 1):
        dims = {s[-i] for s in known if len(s) >= i and s[-i] != 1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(reversed(out))


def _literal_shape(value: object) -> Shape | None:
    if not isinstance(value, list):
        return ()
    inner = {_literal_shape(v) for v in value}
    if len(inner) > 1:
        return None
    one = inner.pop() if inner else ()
    return None if one is None else (len(value), *one)


def _int(tree: Tree) -> int | None:
    if tree.get("k") == "const" and not isinstance(tree["v"], bool):
        v = tree["v"]
        return int(v) if float(v) == int(v) else None
    if tree.get("k") == "neg":
        inner = _int(tree["x"])
        return -inner if inner is not None else None
    return None


def _ints(tree: Tree | None) -> Shape | None:
    """A shape argument: an int, or a tuple/list/array literal of ints."""
    if tree is None:
        return None
    single = _int(tree)
    if single is not None:
        return (single,)
    if tree.get("k") in ("tuple", "list"):
        got = [_int(t) for t in tree["items"]]
        return None if None in got else tuple(got)  # type: ignore[arg-type]
    if tree.get("k") == "array" and all(isinstance(v, int) for v in tree["v"]):
        return tuple(tree["v"])
    return None


def _matmul(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None or not a or not b:
        return None
    if len(a) == 1 and len(b) == 1:
        return () if a == b else None
    if len(b) == 1:
        return a[:-1] if a[-1] == b[0] else None
    if len(a) == 1:
        return (*b[:-2], b[-1]) if a[0] == b[-2] else None
    if a[-1] != b[-2]:
        return None
    batch = broadcast(a[:-2], b[:-2])
    return None if batch is None else (*batch, a[-2], b[-1])


class Shapes:
    """Shapes of the trees of one recipe (its defs memoised)."""

    def __init__(self, defs: dict[str, Tree | None]) -> None:
        self.defs = defs
        self.memo: dict[str, Shape | None] = {}
        self.largest = 0  # the element count of the largest array seen

    def of(self, tree: Tree) -> Shape | None:
        got = self._of(tree)
        if got is not None:
            self.largest = max(self.largest, math.prod(got))
        return got

    def _of(self, tree: Tree) -> Shape | None:
        k = tree.get("k")
        if k == "const":
            return ()
        if k == "array":
            return _literal_shape(tree["v"])
        if k == "ref":
            key = tree["id"]
            if key not in self.memo:
                self.memo[key] = None  # while it is computed
                found = self.defs.get(key)
                self.memo[key] = self.of(found) if found is not None else None
            return self.memo[key]
        if k in ("tuple", "list"):
            items = {self.of(t) for t in tree["items"]}
            if len(items) != 1 or None in items:
                return None if items else (0,)
            return (len(tree["items"]), *items.pop())  # type: ignore[misc]
        if k == "neg":
            return self.of(tree["x"])
        if k in ("bin", "cmp"):
            a, b = self.of(tree["a"]), self.of(tree["b"])
            return _matmul(a, b) if tree["op"] == "@" else broadcast(a, b)
        if k == "draw":
            return self._draw(tree)
        if k == "call":
            return self._call(tree["fn"], tree["args"], tree.get("kw", {}))
        if k == "index":
            return self._index(tree)
        if k == "setitem":  # x[idx] = v keeps x's shape
            return self.of(tree["x"])
        if k == "one_hot":
            inner = self.of(tree["x"])
            if inner is None or tree["n"] is None:
                return None
            inner = inner[:-1] if len(inner) > 1 and inner[-1] == 1 else inner
            return (*inner, tree["n"])
        return None

    def _draw(self, tree: Tree) -> Shape | None:
        if tree.get("size") is not None:
            return tuple(tree["size"])
        p = tree["p"]
        if tree["dist"] == "permutation":
            n = _int(p["x"])
            return (n,) if n is not None else self.of(p["x"])
        if tree["dist"] == "choice":
            return ()
        return broadcast(*(self.of(v) for v in p.values()))

    def _axis(self, args: list[Tree], kw: dict, at: int) -> int | str | None:
        node = kw.get("axis", args[at] if len(args) > at else None)
        if node is None or node.get("k") == "none":
            return None
        got = _int(node)
        return got if got is not None else "?"

    def _axes(self, args: list[Tree], kw: dict, at: int) -> int | tuple[int, ...] | str | None:
        """A reduction's axis, or its tuple of axes (``mean(axis=(1, 2))``)."""
        node = kw.get("axis", args[at] if len(args) > at else None)
        if node is not None and node.get("k") in ("tuple", "list"):
            axes = [_int(item) for item in node.get("items") or []]
            return tuple(a for a in axes if a is not None) if None not in axes else "?"
        return self._axis(args, kw, at)

    def _call(self, fn: str, args: list[Tree], kw: dict) -> Shape | None:
        first = self.of(args[0]) if args else None
        rule = NUMPY_FUNCTIONS.get(fn, "elementwise" if fn == "astype" else "")
        if rule == "elementwise":
            return first
        if rule == "broadcast":  # np.where(cond) alone gives indices: their count is data's
            return broadcast(*(self.of(a) for a in args)) if len(args) > 1 else None
        if rule == "square":
            n = _int(args[0]) if args else None
            m_node = kw.get("M", args[1] if fn == "eye" and len(args) > 1 else None)
            m = n if m_node is None or m_node.get("k") == "none" else _int(m_node)
            return None if n is None or m is None else (n, m)
        if rule == "sized":
            return _ints(kw.get("shape", args[0] if args else None))
        if rule == "range":
            ends = [_number(a) for a in args]
            if not ends or None in ends:
                return None
            lo, hi = (0, ends[0]) if len(ends) == 1 else (ends[0], ends[1])
            step = ends[2] if len(ends) > 2 else 1
            return (max(0, math.ceil((hi - lo) / step)),) if step else None  # type: ignore[operator]
        if rule == "num":
            num = kw.get("num", args[2] if len(args) > 2 else None)
            n = 50 if num is None else _int(num)
            return (n,) if n is not None else None
        if rule == "join" and args:
            return self._joined(fn, args, kw)
        if first is None:
            return None
        if rule == "reduce":
            return _reduced(first, self._axes(args, kw, 1), _keepdims(kw))
        return self._reshaped(rule, first, args, kw)

    def _reshaped(self, rule: str, first: Shape, args: list[Tree], kw: dict) -> Shape | None:
        size = math.prod(first)
        if rule == "reshape":
            target = _ints(kw.get("newshape", kw.get("shape", args[1] if len(args) > 1 else None)))
            return _reshape(size, target)
        if rule == "flat":
            return (size,)
        if rule == "scan":
            return (size,) if self._axis(args, kw, 1) is None else first
        if rule == "permute":
            axes = _ints(args[1]) if len(args) > 1 else None
            return tuple(first[a] for a in axes) if axes else tuple(reversed(first))
        if rule == "squeeze":
            axis = self._axis(args, kw, 1)
            if axis is None:
                return tuple(d for d in first if d != 1)
            if not isinstance(axis, int) or not first or first[axis % len(first)] != 1:
                return None
            return tuple(d for i, d in enumerate(first) if i != axis % len(first))
        if rule == "expand":
            axis = self._axis(args, kw, 1)
            if not isinstance(axis, int):
                return None
            at = axis if axis >= 0 else len(first) + 1 + axis
            return (*first[:at], 1, *first[at:])
        if rule == "product" and len(args) == 2:
            return _matmul(first, self.of(args[1]))
        if rule == "outer" and len(args) == 2:
            other = self.of(args[1])
            return None if other is None else (size, math.prod(other))
        if rule == "tile" and len(args) == 2:
            reps = _ints(args[1])
            if reps is None:
                return None
            rank = max(len(first), len(reps))
            a = (1,) * (rank - len(first)) + first
            r = (1,) * (rank - len(reps)) + reps
            return tuple(x * y for x, y in zip(a, r, strict=True))
        if rule == "repeat" and len(args) >= 2:
            times = _int(args[1])
            axis = self._axis(args, kw, 2)
            if times is None or axis == "?":
                return None
            if axis is None:
                return (size * times,)
            return tuple(d * times if i == axis % len(first) else d for i, d in enumerate(first))
        return None

    def _joined(self, fn: str, args: list[Tree], kw: dict) -> Shape | None:
        seq = args[0]
        if seq.get("k") not in ("list", "tuple"):
            return None
        got = [self.of(t) for t in seq["items"]]
        parts = [p for p in got if p is not None]
        if not parts or len(parts) != len(got):
            return None
        axis: int | str | None
        if fn == "column_stack":
            parts = [p if len(p) >= 2 else (p[0], 1) for p in parts]
            fn, axis = "concatenate", 1
        elif fn == "vstack":
            parts = [p if len(p) >= 2 else (1, *p) for p in parts]
            fn, axis = "concatenate", 0
        elif fn == "hstack":
            fn, axis = "concatenate", 0 if len(parts[0]) == 1 else 1
        else:
            axis = self._axis(args, kw, 1)
            axis = 0 if axis is None and fn == "stack" else axis
        if not isinstance(axis, int):
            return None
        if fn == "stack":
            if len(set(parts)) != 1:
                return None
            one = parts[0]
            at = axis if axis >= 0 else len(one) + 1 + axis
            return (*one[:at], len(parts), *one[at:])
        ranks = {len(p) for p in parts}
        if len(ranks) != 1 or not parts[0]:
            return None
        at = axis % ranks.pop()
        if len({p[:at] + p[at + 1 :] for p in parts}) != 1:
            return None
        one = parts[0]
        return (*one[:at], sum(p[at] for p in parts), *one[at + 1 :])

    def _index(self, tree: Tree) -> Shape | None:
        shape = self.of(tree["x"])
        if shape is None:
            return None
        items = tree["idx"]
        used = sum(1 for i in items if i.get("k") not in ("none", "ellipsis"))
        out: list[int] = []
        dim = 0
        advanced: Shape | None = None
        for item in items:
            k = item.get("k")
            if k == "none":
                out.append(1)
                continue
            if k == "ellipsis":
                keep = len(shape) - used
                out.extend(shape[dim : dim + keep])
                dim += keep
                continue
            if dim >= len(shape):
                return None
            if k == "slice":
                out.append(
                    len(
                        range(*slice(item["start"], item["stop"], item["step"]).indices(shape[dim]))
                    )
                )
            elif _int(item) is not None:
                pass  # an integer drops the axis
            else:
                if advanced is not None or is_mask(item, self):
                    return None  # two fancy indices, or a boolean mask: data-dependent
                advanced = self.of(item)
                if advanced is None:
                    return None
                out.extend(advanced)
            dim += 1
        return (*out, *shape[dim:])


def _number(tree: Tree) -> float | None:
    if tree.get("k") == "const" and not isinstance(tree["v"], bool):
        return tree["v"]
    if tree.get("k") == "neg":
        inner = _number(tree["x"])
        return -inner if inner is not None else None
    return None


def _keepdims(kw: dict) -> bool:
    node = kw.get("keepdims")
    return bool(node is not None and node.get("k") == "const" and node["v"])


def _reduced(shape: Shape, axis, keepdims: bool) -> Shape | None:
    if axis == "?":
        return None
    if axis is None:
        return (1,) * len(shape) if keepdims else ()
    if not shape:
        return None
    at = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(1 if i in at else d for i, d in enumerate(shape) if keepdims or i not in at)


def _reshape(size: int, target: Shape | None) -> Shape | None:
    if target is None:
        return None
    known = math.prod(d for d in target if d != -1)
    if target.count(-1) == 1:
        if known == 0 or size % known:
            return None
        return tuple(size // known if d == -1 else d for d in target)
    return target if known == size else None


def is_mask(tree: Tree, shapes: Shapes) -> bool:
    """A boolean index (a comparison, a bool cast, a bool literal): its length is data's."""
    k = tree.get("k")
    if k == "cmp":
        return True
    if k == "call" and tree["fn"] == "astype":
        return tree["args"][1].get("v") == "bool"
    if k == "ref":
        found = shapes.defs.get(tree["id"])
        return found is not None and is_mask(found, shapes)
    if k == "bin" and tree["op"] in ("&", "|"):
        return is_mask(tree["a"], shapes) or is_mask(tree["b"], shapes)
    if k == "array":
        flat = tree["v"]
        while isinstance(flat, list) and flat and isinstance(flat[0], list):
            flat = flat[0]
        return bool(flat) and isinstance(flat[0], bool)
    return False


def recipe_shape(recipe: dict) -> Shape | None:
    """The shape of a recipe's root array, or None when the code alone does not give it."""
    return Shapes(recipe["defs"]).of(recipe["root"])


def largest(recipe: dict) -> int:
    """The element count of the largest array (any node) of the recipe whose shape is known."""
    shapes = Shapes(recipe["defs"])
    for tree in (recipe["root"], *recipe["defs"].values()):
        shapes.of(tree)
    return shapes.largest
