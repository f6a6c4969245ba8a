"""archgraph: declare a neural network as a graph of typed ops; infer every shape and
count every parameter without a deep-learning framework.

>>> import archgraph
>>> archgraph.load("bert-base-uncased").params().total
109482240
"""
import gc as _gc

_collect = _gc.isenabled()
_gc.disable()  # importing makes only objects that live on: no cycle collection while it runs
try:
    from .builder import ModelBuilder
    from .errors import ArchgraphError, ShapeError, SpecError
    from .load import builtin_specs, load
    from .model import Model
    from .passes.params import count_params
    from .passes.shapes import infer_shapes
finally:
    if _collect:
        _gc.enable()
    del _collect

__all__ = ["ArchgraphError", "Model", "ModelBuilder", "ShapeError", "SpecError", "builtin_specs",
           "count_params", "infer_shapes", "load"]
__version__ = "0.1.0"
