"""Find and load a model: a spec path, or the name of a built-in spec.

>>> load("gpt2").params().total
124439808
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from .errors import ArchgraphError, Loc, SpecError, did_you_mean
from .graph import Model
from .spec.build import build_model
from .spec.yamlload import LocDict, load_file

_HERE = Path(__file__).resolve().parent
SPEC_DIRS = (_HERE / "_specs", _HERE.parent / "specs")  # installed wheel, then source checkout


def builtin_specs() -> dict[str, Path]:
    """Name -> path of every built-in spec."""
    for folder in SPEC_DIRS:
        if folder.is_dir():
            return {p.stem: p for p in sorted(folder.glob("*.yaml"))}
    return {}


def resolve(source: str | Path, relative_to: Path | None = None, loc: Loc | None = None) -> Path:
    """A spec path for `source`: an existing file, or a built-in name."""
    text = str(source)
    candidates = [Path(text)]
    if relative_to is not None:
        candidates.insert(0, relative_to / text)
    for path in candidates:
        try:
            if path.is_file():
                return path
        except OSError:  # a name too long for the file system, say
            continue
    builtins = builtin_specs()
    if text in builtins:
        return builtins[text]
    if text.endswith((".yaml", ".yml")) or "/" in text:
        raise SpecError(f"no spec file '{text}'", loc=loc)
    hint = did_you_mean(text, builtins)
    raise SpecError(f"'{text}' is neither a spec file nor a built-in model", loc=loc,
                    hint=hint or ("built-in models: " + ", ".join(builtins) +
                                  " (run 'archgraph zoo')"))


def read_spec(source: str | Path) -> tuple[LocDict, Callable[[str, Loc], LocDict]]:
    """A spec file's YAML and the loader of the specs it `extends` (found beside it, or built in)."""
    path = resolve(source)

    def parent(name: str, at: Loc) -> LocDict:
        return load_file(resolve(name, path.parent, at))

    return load_file(path), parent


def load(source: str | Path, settings: Mapping[str, Any] | None = None) -> Model:
    """Load a spec file, built-in model or Hugging Face config.json; `settings` override variables
    or bind dims (like --set)."""
    from .checkpoint import is_checkpoint_path
    from .hf import is_config, load_config
    if is_checkpoint_path(source):
        raise ArchgraphError(f"'{source}' is a checkpoint: it lists tensors but has no graph to analyse",
                             hint="use 'archgraph params CHECKPOINT' to count its tensors, or pass the "
                                  "model's config.json or spec (and 'archgraph check SPEC --against "
                                  "CHECKPOINT' to compare them)")
    if is_config(source):
        return load_config(source, settings)
    spec, parent = read_spec(source)
    return build_model(spec, settings, parent)
