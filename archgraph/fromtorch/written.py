"""The text `to_spec` returns: `archgraph.spectext.SpecText` (torch-free, shared with import-onnx)."""
from __future__ import annotations

from ..spectext import SpecText

__all__ = ["SpecText"]
