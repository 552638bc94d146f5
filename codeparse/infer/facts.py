"""What inference records about names: scopes, definitions and a function's facts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional


if TYPE_CHECKING:  # callees imports this module
    from .callees import Callee

__all__ = ["Definition", "Scope", "FunctionFacts", "LOOPS", "MUTATIONS"]

#: Scope kinds that run their body once per pass.
LOOPS = ("for", "while")
#: Definition kinds that change a value in place: a container mutator (`torch.append(l, v)`),
#: and on an object built in the code its `__init__` call, an attribute set (`box.y = v`) and
#: a call of another method (`(box).scale(k)`: kept where the method may set an attribute).
MUTATIONS = ("mutate", "init", "setattr", "call")


class Scope:
    """A block a statement sits in: the ``if``/loop that owns it, and which branch.

    One object per block (compared and hashed by identity: a tuple of scopes is a cheap
    memo key)."""

    __slots__ = ("kind", "branch", "test", "key")

    def __init__(self, kind: str, branch: str, test: tuple[int, int], key: int):
        self.kind = kind  # "if", "for", "while", "with", "def"
        self.branch = branch  # "then", "else", "body"
        self.test = test  # span of the condition / iteration expression
        self.key = key  # identity of the owning statement (its start offset)

    def __repr__(self) -> str:
        return f"Scope(kind={self.kind!r}, branch={self.branch!r}, test={self.test!r}, key={self.key!r})"


@dataclass(slots=True)
class Definition:
    """One binding of a name: an assignment, a for target, a parameter, or a mutation
    (``torch.append(l, v)`` defines ``l``, ``(obj).__init__(a, b)`` and ``(obj).m(a)`` define
    ``obj``: ``value`` is then the whole call; ``obj.y = v`` defines ``obj``: ``value`` is
    ``v``)."""

    name: str
    kind: str  # "assign", "for", "with", "param", "mutate", "init", "setattr", "call"
    value: Optional[tuple[int, int]]  # span of the value expression
    element: Optional[int]  # index into a tuple value that is not a display
    scopes: tuple[Scope, ...]
    annotation: Optional[str] = None
    start: int = 0


@dataclass
class FunctionFacts:
    """What inference needs to know about one function."""

    params: dict[str, Optional[str]]  # name -> annotation
    defs: dict[str, list[Definition]] = field(default_factory=dict)
    # Declared `self` attributes: name -> (role, type), from the class, if any.
    declared: Optional[dict[str, tuple[str, Optional[str]]]] = None
    self_name: str = "self"
    # Declarations of other classes (an archive's), for paths of more than one step:
    # qualified class name -> its declared attributes, or None when unknown.
    types: Optional[Callable[[str], Optional[dict[str, tuple[str, Optional[str]]]]]] = None
    # The class a method belongs to (qualified), or None for free functions and bare text.
    owner: Optional[str] = None
    # Callees whose body is available: qualified name -> Callee, or None (rule 3).
    functions: Optional[Callable[[str], Optional["Callee"]]] = None
    # Qualified names whose summaries are being computed (shared by the functions of a
    # text or an archive).
    active: set = field(default_factory=set)
    # `return` values: (span, scopes).
    returns: list[tuple[tuple[int, int], tuple[Scope, ...]]] = field(default_factory=list)
    # Whether the function sets an attribute of its object (`self.y = v`).
    sets_self: bool = False
    # The attributes of its object it sets: path (`self.y`) -> its sets (kind "setattr",
    # value the value set), in the order of the text.
    self_sets: dict[str, list[Definition]] = field(default_factory=dict)
