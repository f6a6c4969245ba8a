"""The text `to_spec` and `import-onnx` return: the spec's YAML (a `str`), with the tensors of the values file it
names (`values:`, the buffers archgraph does not compute from constants) and a way to write both."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable


class SpecText(str):
    """A spec's YAML.  `values` holds the tensors of the file its `values:` names, by their tensor
    names ({} when it names none); `write(path)` writes the spec there and the file beside it."""

    values: dict
    values_file: str | None

    def __new__(cls, text: str, values: dict | None = None, values_file: str | None = None):
        made = super().__new__(cls, text)
        made.values, made.values_file = dict(values or {}), values_file
        return made

    def write(self, path: str | Path, inputs: Iterable[str | Path] = ()) -> list[Path]:
        """Write the spec to `path` and its values file beside it (each atomically, never over one of
        `inputs`); return the paths written."""
        from .outfile import write_output
        written = [write_output(path, str(self), inputs=inputs)]
        if self.values_file:
            written.append(write_output(Path(path).parent / self.values_file, self.values_bytes(), inputs=inputs))
        return written

    def values_bytes(self) -> bytes:
        """The values file's bytes: the tensors (torch's or numpy's) in the safetensors format."""
        import numpy as np
        if all(isinstance(v, np.ndarray) for v in self.values.values()):
            from safetensors.numpy import save as save_numpy
            return save_numpy({k: np.array(v, order="C", copy=True) for k, v in self.values.items()})
        from safetensors.torch import save
        return save({k: v.detach().contiguous().cpu() for k, v in self.values.items()})
