"""The one helper that lowers torch's and transformers' loggers while a model is traced."""
import logging
import warnings

import pytest

pytest.importorskip("torch")
from archgraph.fromtorch.quiet import quiet  # noqa: E402


def test_levels_are_lowered_inside_and_given_back_after_an_error():
    a, b = logging.getLogger("archgraph-test-a"), logging.getLogger("archgraph-test-b")
    a.setLevel(logging.INFO)
    b.setLevel(logging.NOTSET)
    with pytest.raises(RuntimeError, match="inside"):
        with quiet(("archgraph-test-a", "archgraph-test-b"), logging.CRITICAL):
            assert (a.level, b.level) == (logging.CRITICAL, logging.CRITICAL)
            raise RuntimeError("inside")
    assert (a.level, b.level) == (logging.INFO, logging.NOTSET)


def test_warnings_are_hidden_only_when_asked():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet((), logging.ERROR, hide_warnings=True):
            warnings.warn("hidden")
        with quiet((), logging.ERROR):
            warnings.warn("shown")
    assert [str(w.message) for w in seen] == ["shown"]
