"""Path conditions of export findings: the guards of the branches that enclose them.

A finding sits in a function, under the ``if`` statements that enclose it there, and
the function is reached from ``forward`` through call sites that sit under ``if``
statements of their own.  Those are its *guards*, outermost first, each with its
condition (as a finding's message shows it), the condition's kind, the branch taken
(``then``/``else``) and where it is.

A blocker is *conditional* when one of its guards depends on an argument (an optional
input included: ``if batch_sizes is not None``) or on an attribute whose saved value
does not decide it: export meets it only for the calls that take that branch, so the
example decides.  A blocker reached on every call (no such guard on the best path from
``forward``) blocks every export.

All of it is computed on plain data: the code files' functions
(``Function.model_dump(mode="json")``), the program's call sites
(:attr:`codeparse.text.program.Analysis.sites`) and each code file's text, read only for the
files where a finding has a guard (to tell a then-branch from an else-branch).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Optional

__all__ = ["CONDITIONAL_KINDS", "PathGuards", "conditional", "functions_of", "guard_text"]

# Guards whose side the caller (or the module's saved state) chooses, not the data.
CONDITIONAL_KINDS = frozenset({"argument", "attribute"})
# Guards whose side the saved values (or what torch.export knows of the runtime) may decide.
_DECIDABLE = ("attribute", "constant", "runtime")
_MAX_GUARDS = 8


def conditional(guards: Iterable[dict]) -> bool:
    """One of ``guards`` is chosen per call, not by the data: a blocker beneath runs on some calls only."""
    return any(g["kind"] in CONDITIONAL_KINDS and g.get("decided") is None for g in guards)


def guard_text(g: dict) -> str:
    """``when `cond``` or ``when not `cond``` (plain text)."""
    return f"when `{g['condition']}`" if g["branch"] == "then" else f"when not `{g['condition']}`"


class PathGuards:
    """The guards of each position of the reachable functions of one program.

    ``functions``: qualified name -> ``(code file path, function as plain data)``;
    ``sites``: caller -> ``[(callee, call offset), ...]``; ``entries``: where calls
    start (``forward``), or empty when none is known (then every function counts as an
    entry); ``text(path)``: a code file's text; ``locate(path, offset, line)``: the
    original ``(file, line)`` of a code position; ``excerpt(condition)``: the condition
    as messages show it; ``decide(path, function, if_)``: the branch the saved module
    state takes at an ``if`` (``"then"``/``"else"``, with why), or None.
    """

    def __init__(self, functions: dict[str, tuple[str, dict]], sites: dict[str, list[tuple[str, int]]],
                 entries: list[str], text: Callable[[str], Optional[str]],
                 locate: Callable[[str, int, int], Optional[tuple[str, int]]],
                 excerpt: Callable[[dict], str],
                 decide: Optional[Callable[[str, dict, dict], Optional[tuple[str, str]]]] = None,
                 callee: Optional[Callable[[str], Any]] = None):
        self.functions = functions
        self.sites = sites
        self.entries = [e for e in entries if e in functions]
        # No forward: a module scripted on its own whose forward is overloaded
        # (`forward__0(input: Tensor)`, `forward__1(input: PackedSequence)`): each
        # overload runs only for calls whose arguments match it.
        self._overloads: list[str] = []
        if not self.entries:
            overloads = [q for q in functions if q.rpartition(".")[2].startswith("forward__")]
            if len(overloads) > 1:
                self.entries = self._overloads = overloads
        self.entries = self.entries or list(functions)
        self._text = text
        self._texts: dict[str, Optional[str]] = {}
        self._locate = locate
        self._excerpt = excerpt
        self._decide = decide
        self._chains: Optional[dict[str, list[dict]]] = None
        self._never: set[str] = set()  # reached only through calls the saved state never makes
        self._via: dict[str, tuple[str, int]] = {}  # callee -> the call site of its best path
        self._guards: dict[tuple[int, str], dict] = {}
        self._callee = callee
        self._callers: Optional[dict[str, list[tuple[str, int]]]] = None
        self._passed: dict[tuple[str, str, bool], list[tuple[str, int]]] = {}
        self._refined: dict[int, dict] = {}  # id(if or loop) -> its condition as export sees it
        self._inferred: Optional[dict[int, str]] = None  # id(inference) -> its function
        self._ruled: dict[str, frozenset] = {}
        # While :meth:`definition_guard` asks: one more branch taken never, (function, offset
        # of the if, side), and the ``ruled_out`` the data-dependence questions take then.
        self._assumed: Optional[tuple[str, int, str]] = None
        self._ruling: Optional[Callable[[Any], frozenset]] = None
        # Per assumed branch, the memos its questions filled (refined, passed, ruled, ruling):
        # the blockers of one archive ask about the same few ifs.
        self._assumptions: dict[tuple[str, int, str], tuple[dict, dict, dict, Callable[[Any], frozenset]]] = {}

    # -- one function --------------------------------------------------------
    def local(self, qualified: str, offset: int) -> list[dict]:
        """The guards of the ``if`` statements enclosing ``offset`` in one function, outermost first."""
        found = self.functions.get(qualified)
        if found is None:
            return []
        path, fn = found
        out = []
        for if_ in fn["ifs"]:
            block, head = if_["block_span"], if_["span"]
            if not (block["start"] <= offset < block["end"]) or head["start"] <= offset < head["end"]:
                continue
            out.append(self._guard(path, fn, if_, self._branch(path, if_, offset)))
        return out

    def _branch(self, path: str, if_: dict, offset: int) -> str:
        if path not in self._texts:
            self._texts[path] = self._text(path)
        text = self._texts[path]
        if text is None or not if_["has_else"]:
            return "then"
        head = if_["span"]
        # The printer puts `else:` on its own line at the `if`'s indentation.
        at = text.find("\n" + " " * (head["column"] - 1) + "else:", head["end"], if_["block_span"]["end"])
        return "else" if 0 <= at < offset else "then"

    def _overload_guard(self, qualified: str) -> dict:
        path, fn = self.functions[qualified]
        params = fn["signature"]["params"][1:]  # after self
        shown = ", ".join(f"{p['name']}: {(p['annotation'] or '?').rpartition('.')[2]}" for p in params[:2])
        span = fn["span"]
        where = self._locate(path, span["start"], span["line"]) or (path, span["line"])
        condition = f"the call matches {fn['name']}({shown})"
        return {"kind": "argument", "branch": "then", "decided": None,
                "shown": {"condition": condition, "kind": "argument", "branch": "then", "path": where[0],
                          "line": where[1], "decided": None}}

    def _guard(self, path: str, fn: dict, if_: dict, branch: str) -> dict:
        """One guard, made once per ``if`` and side: its kind and whether the saved values
        decide it now; its text and original line only when a finding shows it (:meth:`public`)."""
        key = (id(if_), branch)
        guard = self._guards.get(key)
        if guard is not None:
            return guard
        cond = self.condition(path, fn, if_)
        guard = {"kind": cond["kind"], "branch": branch, "decided": None, "at": (path, if_)}
        if self._decide is not None and cond["kind"] in _DECIDABLE:
            taken = self._decide(path, fn, if_)
            if taken is not None:
                side, why = taken
                # The saved state takes `side`: this branch runs always, or never.
                guard["decided"] = why if side == branch else None
                if side != branch:
                    guard["dead"] = why
        self._guards[key] = guard
        return guard

    def ruled_out(self, inference: Any) -> frozenset:
        """The branches of a function (given by its inference) that the saved values rule
        out: ``(offset of the if, "then"/"else")`` for each ``if`` on attributes, literals or
        the runtime predicates torch.export knows that :meth:`_guard` decides.  The
        data-dependence questions (:class:`codeparse.infer.datadep.FunctionDataDependence`)
        leave out what such a branch defines or returns."""
        if self._callee is None:
            return frozenset()
        if self._inferred is None:
            self._inferred = {}
            for q in self.functions:
                found = self._callee(q)
                if found is not None:
                    self._inferred.setdefault(id(found.inference), q)
        qualified = self._inferred.get(id(inference))
        if qualified is None:
            return frozenset()
        out = self._ruled.get(qualified)
        if out is None:
            path, fn = self.functions[qualified]
            dead = set()
            if self._assumed is not None and self._assumed[0] == qualified:
                dead.add(self._assumed[1:])
            for if_ in fn["ifs"] if self._decide is not None else ():
                if if_["condition"] is None or if_["condition"]["kind"] not in _DECIDABLE:
                    continue
                for branch in ("then", "else"):
                    if self._guard(path, fn, if_, branch).get("dead"):
                        dead.add((if_["span"]["start"], branch))
            out = self._ruled[qualified] = frozenset(dead)
        return out

    def _data(self, inference: Any, **kwargs: Any) -> Any:
        """The data-dependence questions about one function, with the branches the saved
        values rule out left out."""
        from ..infer.datadep import FunctionDataDependence

        ruled_out = self.ruled_out if self._decide is not None and self._callee is not None else None
        return FunctionDataDependence(inference, ruled_out=self._ruling or ruled_out, **kwargs)

    def definition_guard(self, qualified: str, offset: int, blocks: Callable[[], bool]) -> Optional[dict]:
        """For a blocker at ``offset`` of ``qualified`` whose guards do not make it conditional:
        a guard the call chooses (:func:`conditional`) of an ``if`` in that function, or in
        a caller on its best path from ``forward``, without whose side the blocker is gone
        (``blocks()``, asked again with that side never taken, is false): what makes its
        value data-dependent is defined only there (``rows = kept[:, None] - kept[None]``
        under ``if self.training:``), so export fails only for calls that take it.  None
        when there is no such side (one that encloses the blocker itself or the call that
        reaches it does not count), or no function bodies to ask."""
        if self._callee is None:
            return None
        self.chains()
        seen: set[str] = set()
        q, at = qualified, offset
        while q not in seen and q in self.functions:
            seen.add(q)
            path, fn = self.functions[q]
            for if_ in fn["ifs"]:
                block, head = if_["block_span"], if_["span"]
                if if_["condition"] is None or block["start"] <= at < block["end"]:
                    continue
                for side in ("then", "else") if if_["has_else"] else ("then",):
                    guard = self._guard(path, fn, if_, side)
                    if guard.get("dead") or not conditional([guard]):
                        continue
                    if not self._assuming((q, head["start"], side), blocks):
                        return guard
            if q not in self._via:
                break
            q, at = self._via[q]
        return None

    def _assuming(self, dead: tuple[str, int, str], blocks: Callable[[], bool]) -> bool:
        """``blocks()`` asked with one more branch never taken: the answers memoized without
        it (here and, per ``ruled_out``, on the callees) set aside meanwhile, those memoized
        under the same assumption for an earlier blocker used again."""
        kept = self._refined, self._passed, self._ruled, self._assumed, self._ruling
        memos = self._assumptions.get(dead)
        if memos is None:
            # The ruling function is the callees' memo key for this assumption.
            memos = self._assumptions[dead] = ({}, {}, {}, lambda inference: self.ruled_out(inference))
        self._refined, self._passed, self._ruled, self._ruling = memos
        self._assumed = dead
        try:
            return blocks()
        finally:
            self._refined, self._passed, self._ruled, self._assumed, self._ruling = kept

    def condition(self, path: str, fn: dict, block: dict) -> dict:
        """The condition of an ``if`` or loop as export sees it: a ``tensor_value``
        condition whose value no tensor's value reaches (read by
        :class:`codeparse.infer.valuekinds.ValueKinds`: ``len()`` of a list whose elements are
        replaced, a none-check on an ``Optional`` argument, a key of a dict) takes the kind
        it rests on (with the producers of a data-dependent size it reads); else as inferred."""
        cond = block["condition"]
        if cond is None or self._callee is None:
            return cond
        if cond["kind"] != "tensor_value" and not (cond["kind"] == "tensor_shape" and cond["data_dependent_shape"]):
            return cond
        key = id(block)
        found = self._refined.get(key)
        if found is None:
            found = self._refined[key] = self._refine(path, fn, block, cond)
        return found

    def _refine(self, path: str, fn: dict, block: dict, cond: dict) -> dict:
        from ..infer.valuekinds import ValueKinds

        callee = self._callee(fn["qualified_name"])
        if callee is None:
            return cond
        inf = callee.inference
        span = block["span"]
        start = inf.text.find(cond["text"], span["start"], span["end"] + len(cond["text"]))
        if start < 0:
            return cond
        dd = self._data(inf)
        reader = ValueKinds(dd)
        kinds = reader.condition(inf.tree((start, start + len(cond["text"]))))
        if kinds is None:
            return cond
        kind = ValueKinds.kind(kinds)
        related: list[dict] = []
        dependent = False
        if kind == "tensor_shape":
            for node in reader.shapes:
                made = dd.tensor(node, 0)
                if made is not None:
                    dependent = True
                    for a, b in sorted(made, key=repr):
                        if isinstance(a, int) and not start <= a < start + len(cond["text"]):
                            related.append({"start": a, "end": b, "line": inf.text.count("\n", 0, a) + 1})
        params = {p["name"] for p in fn["signature"]["params"][1:]}
        sources = []
        for s in cond["sources"]:
            ref = s["ref"]
            natural = ("runtime" if s["kind"] == "runtime" else
                       "attribute" if ref == "self" or ref.startswith("self.") else
                       "argument" if ref in params else kind)
            sources.append(dict(s, kind=natural))
        order = ("tensor_shape", "argument", "attribute", "runtime", "constant")
        sources.sort(key=lambda s: order.index(s["kind"]) if s["kind"] in order else len(order))
        if kind == cond["kind"] and dependent == cond["data_dependent_shape"]:
            return cond  # the same answer: inference's own related lines stand
        return dict(cond, kind=kind, sources=sources, data_dependent_shape=dependent, related=related)

    def _conversion(self, qualified: str, span: dict, names: frozenset) -> Optional[tuple]:
        """``(inference, call, data-dependence)`` of a one-argument conversion call whose
        operator is in ``names``, or None (no function body known, another call)."""
        from ..parse.expressions import CallExpr

        callee = self._callee(qualified) if self._callee is not None else None
        if callee is None:
            return None
        inf = callee.inference
        node = inf.tree((span["start"], span["end"]))
        if not isinstance(node, CallExpr) or len(node.args) != 1 or node.keywords:
            return None
        dd = self._data(inf)
        kind, name = dd._op(node)
        if kind != "operator" or name not in names:
            return None
        return inf, node, dd

    def conversion_holds_no_data(self, qualified: str, span: dict) -> bool:
        """``int(t)``/``float(t)`` (or of a number ``item()`` read) of a tensor built from
        numbers that hold no data (sizes, arguments, attributes, literals): export folds it."""
        from ..infer.datadep import export_table
        from ..infer.valuekinds import ValueKinds

        found = self._conversion(qualified, span, export_table().conversions)
        if found is None:
            return False
        inf, node, dd = found
        reader = ValueKinds(dd)
        arg = node.args[0]
        typ = inf.expr_type(arg)
        kinds = reader.tensor_holds_no_data(arg) if typ in inf.sem.tensor_types else reader.condition(arg)
        return kinds is not None and not reader.shapes_data_dependent()

    def number_conversion(self, qualified: str, span: dict) -> Optional[str]:
        """For ``int(n)``/``float(n)`` of a number (``n = t.item()``, not a tensor): the
        operator whose argument it is (``zeros`` in ``torch.zeros([int(n)])``), or ``""``
        when it is no operator's argument; None for a conversion of a tensor, or when the
        function is not known."""
        from ..infer.datadep import export_table

        found = self._conversion(qualified, span, export_table().number_conversions)
        if found is None or found[0].expr_type(found[1].args[0]) in found[0].sem.tensor_types:
            return None
        _, fn = self.functions[qualified]
        around = [c for c in fn["calls"] if c["span"]["start"] < span["start"] and span["end"] <= c["span"]["end"]]
        if not around:
            return ""
        inner = max(around, key=lambda c: c["span"]["start"])
        return (inner.get("target") or "").rpartition(":")[2] if inner["kind"] == "operator" else ""

    def public(self, guards: list[dict]) -> list[dict]:
        """Guards as a finding carries them (the keys of ``Guard``), located on first use."""
        out = []
        for g in guards:
            shown = g.get("shown")
            if shown is None:
                path, if_ = g["at"]
                head = if_["span"]
                where = self._locate(path, head["start"], head["line"]) or (path, head["line"])
                shown = g["shown"] = {"condition": self._excerpt(if_["condition"]), "kind": g["kind"],
                                      "branch": g["branch"], "path": where[0], "line": where[1],
                                      "decided": g["decided"]}
            out.append(shown)
        return out

    # -- through calls ---------------------------------------------------------
    def chains(self) -> dict[str, list[dict]]:
        """Per reachable function, the guards of the call sites on the best path from an
        entry: one with no conditional guard when there is one, else the first found."""
        if self._chains is not None:
            return self._chains
        best: dict[str, list[dict]] = {e: [] for e in self.entries}
        dead: list[str] = []  # called only where the saved state never goes, so far
        for q in self._overloads:
            # The overload for a tensor input is the ordinary call; the others (a
            # PackedSequence, ...) run only for calls that pass such an argument.
            params = self.functions[q][1]["signature"]["params"][1:2]
            if params and params[0]["annotation"] not in (None, "Tensor"):
                best[q] = [self._overload_guard(q)]
        queue = deque(self.entries)
        while queue:
            caller = queue.popleft()
            here = best[caller]
            for callee, offset in self.sites.get(caller, ()):
                if callee not in self.functions:
                    continue
                chain = (here + self.local(caller, offset))[-_MAX_GUARDS:]
                if any(g.get("dead") for g in chain):
                    dead.append(callee)  # a call the saved state never makes
                    continue
                old = best.get(callee)
                if old is None or (conditional(old) and not conditional(chain)):
                    best[callee] = chain
                    self._via[callee] = (caller, offset)
                    queue.append(callee)
        # What only such calls reach (and what it calls in turn) never runs for the saved module.
        while dead:
            q = dead.pop()
            if q not in best and q not in self._never:
                self._never.add(q)
                dead.extend(c for c, _ in self.sites.get(q, ()) if c in self.functions)
        self._chains = best
        return best

    def decide(self, path: str, fn: dict, if_: dict) -> Optional[tuple[str, str]]:
        """The side the saved values take at an ``if``, and why; None when they do not decide it."""
        return self._decide(path, fn, if_) if self._decide is not None else None

    def user_site(self, qualified: str) -> Optional[tuple[str, int]]:
        """The first line up the best call path from ``qualified`` that is not in a compiled
        helper (whose original file is ``<string>``): the user's line calling it."""
        self.chains()
        seen = {qualified}
        while qualified in self._via:
            caller, offset = self._via[qualified]
            path, fn = self.functions[caller]
            line = next((c["span"]["line"] for c in fn["calls"] if c["span"]["start"] == offset), None)
            if line is None:
                return None
            where = self._locate(path, offset, line)
            if where is not None and not where[0].startswith("<"):
                return where
            if caller in seen:
                return None
            seen.add(caller)
            qualified = caller
        return None

    def data_dependent_argument(self, qualified: str, cond: dict) -> list[tuple[str, int]]:
        """For a shape condition that reads the size of parameters of ``qualified``: the
        lines of the calls that pass a tensor of data-dependent size for one of them
        (``boxes[keep]``, ``torch.where(mask)``; through the callers' own parameters) and of
        its producers; empty when no caller does.  Code the user wrote only (not torch's
        library), memoized per function and parameter."""
        if self._callee is None:
            return []
        path, fn = self.functions[qualified]
        if "/__torch__/torch/" in path:
            return []
        # Tensors only: `len(boxes)` of a `List[Tensor]` is the list's length, whatever the caller passes.
        params = [p["name"] for p in fn["signature"]["params"] if p["annotation"] in ("Tensor", "Optional[Tensor]")]
        names = _sizes_read(cond["resolved"] or cond["text"],
                            {s["ref"] for s in cond["sources"] if s["kind"] == "tensor_shape" and s["ref"] in params})
        out: list[tuple[str, int]] = []
        for name, past_first in sorted(names.items()):
            for where in self._passed_for(qualified, name, 0, past_first):
                if where not in out:
                    out.append(where)
        return out

    def _passed_for(self, qualified: str, name: str, depth: int, past_first: bool = False) -> list[tuple[str, int]]:
        """``past_first``: the condition reads dimensions 1 and up of ``name`` alone, so a
        caller passing a tensor data-dependent in dimension 0 alone passes no such size."""
        key = (qualified, name, past_first)
        if key not in self._passed:
            self._passed[key] = []  # recursion cut
            self._passed[key] = self._passed_in(qualified, name, depth, past_first) if depth < 8 else []
        return self._passed[key]

    def _passed_in(self, qualified: str, name: str, depth: int, past_first: bool) -> list[tuple[str, int]]:
        from ..parse.expressions import CallExpr

        if self._callers is None:
            self._callers = {}
            for caller, calls in self.sites.items():
                for callee, offset in calls:
                    self._callers.setdefault(callee, []).append((caller, offset))
        params = [p["name"] for p in self.functions[qualified][1]["signature"]["params"]]
        out: list[tuple[str, int]] = []
        for caller, offset in self._callers.get(qualified, ()):
            if caller not in self.functions:
                continue
            cpath, cfn = self.functions[caller]
            call = next((c for c in cfn["calls"] if c["span"]["start"] == offset), None)
            if call is None or self.of(caller, offset) is None or not self._may_pass(cpath, cfn, call):
                continue  # no such call, one the saved module never makes, or none that can pass such a size
            found = self._callee(caller)
            if found is None:
                continue
            inf = found.inference
            node = inf.tree((call["span"]["start"], call["span"]["end"]))
            if not isinstance(node, CallExpr):
                continue
            positional = params[1:] if call["kind"] in ("self_method", "submodule", "method") else params
            given = dict(zip(positional, node.args))
            given.update(node.keywords)
            arg = given.get(name)
            found_spans = self._data(inf, parameters=True).tensor(arg, 0) if arg is not None else None
            if not found_spans:
                continue
            lines: list[tuple[str, int]] = []
            rows = self._data(inf, parameters=True, rows_given=True) if past_first else None
            if rows is not None and rows.first_dim_only(arg):
                # Data-dependent in dimension 0 alone if the caller's own parameters it took
                # so are: asked of its callers in the same terms.
                for param in sorted(rows.assumed):
                    lines.extend(self._passed_for(caller, param, depth + 1, past_first=True))
                found_spans = frozenset()
            for item in sorted(found_spans, key=repr):
                if isinstance(item[0], int):
                    lines.append(self._line(cpath, inf.text, item[0]))
                else:  # the caller's own parameter: what its callers pass
                    lines.extend(self._passed_for(caller, item[1], depth + 1))
            if lines:
                out.extend([self._line(cpath, inf.text, call["span"]["start"])] + lines)
        return list(dict.fromkeys(w for w in out if w is not None))

    def _may_pass(self, path: str, fn: dict, call: dict) -> bool:
        """Whether a caller may pass a tensor of data-dependent size, read on its plain data:
        it calls an operator whose output size is data-dependent (``[export]``
        ``data_dependent_outputs``, mask indexing, one-argument ``where``), or passes one of
        its own parameters on.  Only then is its inference asked for (a parse of its file,
        when the content cache gave the file)."""
        from ..infer.datadep import export_table

        table = export_table()
        made = table.producers | table.mask_indexing | table.single_argument
        if any((c.get("target") or "").rpartition(":")[2] in made for c in fn["calls"]):
            return True
        if path not in self._texts:
            self._texts[path] = self._text(path)
        text = self._texts[path]
        if text is None:
            return True
        span = call["span"]
        words = "".join(ch if ch.isalnum() or ch == "_" else " " for ch in text[span["start"]:span["end"]]).split()
        own = {p["name"] for p in fn["signature"]["params"][1:]}
        return any(w in own for w in words)

    def _line(self, path: str, text: str, start: int) -> Optional[tuple[str, int]]:
        return self._locate(path, start, text.count("\n", 0, start) + 1)

    def of(self, qualified: str, offset: int) -> Optional[list[dict]]:
        """The guards of a position, through calls; None when the saved state never runs it."""
        chain = self.chains().get(qualified)
        if chain is None:
            if qualified in self._never:
                return None
            chain = []
        guards = chain + self.local(qualified, offset)
        if any(g.get("dead") for g in guards):
            return None
        return guards


def _sizes_read(condition: str, names: set[str]) -> dict[str, bool]:
    """Those of ``names`` whose size the condition reads (``torch.numel(boxes)``; not its
    device or dtype): the first argument of a shape read (``[export] shape_reads``), each
    with whether every read of it leaves out dimension 0 (``list(t.shape[2:])``,
    ``datadep.past_first_dimension``)."""
    if not names:
        return {}
    from ..grammar.engine import load_grammar
    from ..infer.datadep import export_table, past_first_dimension
    from ..parse.expressions import CallExpr, ExpressionReader, Name

    try:
        node = ExpressionReader(condition, load_grammar()).read(0, len(condition))
    except Exception:  # noqa: BLE001 - a condition the reader cannot take: nothing read
        return {}
    reads = export_table().shape_reads

    def operator(call: CallExpr) -> str:
        return condition[call.func.start:call.func.end].rpartition(".")[2]

    out: dict[str, bool] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        beyond = past_first_dimension(n, operator)
        if isinstance(beyond, Name) and beyond.id in names:
            out[beyond.id] = out.get(beyond.id, True)
            continue
        if isinstance(n, CallExpr) and n.args and isinstance(n.args[0], Name) and n.args[0].id in names:
            if operator(n) in reads:
                out[n.args[0].id] = False
        stack.extend(n.children())
    return out


def functions_of(files: list[dict], live: Optional[set[str]]) -> dict[str, tuple[str, dict]]:
    """Qualified name -> (code file path, function) for the functions in ``live`` (all with None)."""
    out: dict[str, tuple[str, dict]] = {}
    for cf in files:
        for fns in [c["methods"] for c in cf["classes"]] + [cf["functions"]]:
            for fn in fns:
                if live is None or fn["qualified_name"] in live:
                    out.setdefault(fn["qualified_name"], (cf["path"], fn))
    return out

