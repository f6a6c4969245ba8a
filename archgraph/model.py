"""`archgraph.Model`: a built model (data, `archgraph.graph.Model`) with its analyses as methods.

This module sits above the passes and the renderers, so that the model data below
them never imports them.

>>> from archgraph import load
>>> load("gpt2").shapes(B=2, S=16).outputs["logits"]
(2, 16, 50257)
"""
from __future__ import annotations

from . import graph
from .passes.params import ParamReport, count_params
from .passes.shapes import ShapeReport, infer_shapes


class Model(graph.Model):
    """What `archgraph.load` and `ModelBuilder.build` return."""

    def params(self) -> ParamReport:
        """Parameter report (see `archgraph.passes.params`)."""
        return count_params(self)

    checked_shapes: ShapeReport | None = None  # the report `load` checked the model with (no bindings)

    def shapes(self, **bindings: int) -> ShapeReport:
        """Shape report with symbolic sizes bound to the given values."""
        if not bindings and self.checked_shapes is not None and self.checked_shapes.model is self:
            return self.checked_shapes
        return infer_shapes(self, bindings)

    def _repr_svg_(self) -> str | None:
        """The diagram, shown inline by Jupyter (None without Graphviz's dot: Jupyter shows the repr)."""
        from .render.diagram import diagram_svg
        return diagram_svg(self)
