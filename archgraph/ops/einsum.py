"""`einsum`: products of tensors summed over named dims, by an equation as torch.einsum reads it
("bhqd,bhkd->bhqk"): one letter per dim of each input, `...` for dims broadcast alike, the letters
after `->` (or, without an arrow, those used once, alphabetically) the output's dims; a letter's
dims must agree (a size-1 dim broadcasts).  FLOPs: for each combination of every letter's (and the
broadcast dims') values, one product per input beyond the first and one sum: n · ∏ sizes."""
from __future__ import annotations

import re

from ..dims import equal, fmt, fmt_shape, norm, prod
from ..errors import ShapeError
from .base import Op, check, invalid, op
from .elementwise import broadcast

_TERM = re.compile(r"^(?:[A-Za-z]|\.\.\.)*$")


def parse(equation: str) -> tuple[list[str], str | None]:
    """The inputs' terms and the output's (None without an arrow), spaces removed."""
    text = equation.replace(" ", "")
    left, arrow, right = text.partition("->")
    terms = left.split(",")
    for term in terms + ([right] if arrow else []):
        if not _TERM.match(term) or term.count("...") > 1:
            raise ValueError(f"'{term}' is not a term of letters with at most one '...'")
    return terms, right if arrow else None


def _letters(term: str) -> list[str]:
    """The term's dims in order, '...' as one item."""
    out, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            out.append("...")
            i += 3
        else:
            out.append(term[i])
            i += 1
    return out


def _one(size) -> bool:
    """A size of 1 (which broadcasts), known as a number."""
    return isinstance(size, int) and size == 1


@op("einsum", aliases=("torch.einsum", "numpy.einsum"), example={"equation": "bhqd,bhkd->bhqk"})
class Einsum(Op):
    """Products summed over named dims: torch.einsum of an equation ("bij,bjk->bik")."""

    equation: str  # one letter per dim of each input, comma-separated, then -> and the output's letters

    def __post_init__(self):
        try:
            terms, out = parse(self.equation)
        except ValueError as exc:
            raise invalid(self, f"equation {self.equation!r}: {exc}") from None
        if out is not None:
            used = set("".join(terms).replace("...", ""))
            unknown = sorted(set(out.replace("...", "")) - used)
            if unknown or len(set(_letters(out))) != len(_letters(out)):
                raise invalid(self, f"equation {self.equation!r}: the output names "
                                    f"{'letters no input has: ' + ', '.join(unknown) if unknown else 'a dim twice'}")

    def _sizes(self, shapes) -> tuple[dict, tuple, list[str]]:
        """(each letter's size, the broadcast dims of '...', the output's letters)."""
        terms, out = parse(self.equation)
        check(len(terms) == len(shapes), f"equation {self.equation!r} names {len(terms)} inputs; received "
                                         f"{len(shapes)}")
        sizes: dict = {}
        ellipses = []
        for term, shape in zip(terms, shapes):
            letters = _letters(term)
            fixed = len(letters) - ("..." in letters)
            check(len(shape) >= fixed and ("..." in letters or len(shape) == fixed),
                  f"term '{term}' does not fit the input {fmt_shape(shape)}")
            dims = list(shape)
            if "..." in letters:
                at = letters.index("...")
                ellipses.append(tuple(dims[at:at + len(dims) - fixed]))
                dims = dims[:at] + ["..."] + dims[at + len(dims) - fixed:]
            for letter, size in zip(letters, dims):
                if letter == "...":
                    continue
                have = sizes.get(letter)
                if have is None or _one(have):
                    sizes[letter] = size
                elif not _one(size) and not equal(size, have):
                    raise ShapeError(f"einsum '{self.equation}': '{letter}' is {fmt(have)} in one input and "
                                     f"{fmt(size)} in another",
                                     hint="give that letter's dimension one size in every input")
        broadcast_dims = broadcast(*ellipses) if ellipses else ()
        if out is None:
            counts = "".join(terms).replace("...", "")
            out = ("..." if ellipses else "") + "".join(sorted(c for c in set(counts) if counts.count(c) == 1))
        return sizes, broadcast_dims, _letters(out)

    def infer_shape(self, *operands):
        sizes, dots, out = self._sizes(operands)
        shape: list = []
        for letter in out:
            shape.extend(dots if letter == "..." else [sizes[letter]])
        return tuple(shape)

    def flops(self, inputs, outputs):
        sizes, dots, _ = self._sizes(inputs)
        return len(inputs) * norm(prod([*sizes.values(), *dots]))

    def forward(self, run, *operands):
        return run.torch.einsum(self.equation, *operands)
