"""Where specs come from: a file path, or the name of a built-in spec (`specs/`, or
`archgraph/_specs` in an installed wheel), or a Hugging Face family template by its file name
(`specs/hf/clip_vision.yaml` as `clip_vision.yaml`), or a block of the standard library by its
name (`lib.attention`: `specs/lib/attention.yaml`); relative paths inside a spec are relative
to the file that holds them.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import Loc, SpecError, did_you_mean

_PACKAGE = Path(__file__).resolve().parent.parent
SPEC_DIRS = (_PACKAGE / "_specs", _PACKAGE.parent / "specs")  # installed wheel, then source checkout


INDEX_SUFFIX = ".safetensors.index.json"
EXAMPLE_DIRS = (_PACKAGE / "_examples", _PACKAGE.parent / "examples")  # installed wheel, then source checkout


def example_dir() -> Path | None:
    """The folder of archgraph's example files (what the docs' `examples/...` paths name), or None."""
    return next((d for d in EXAMPLE_DIRS if d.is_dir()), None)


def missing_hint(text: str, hint: str | None) -> str | None:
    """The fix for a file that is not there: for the docs' `examples/...` paths, how to get them."""
    if str(text).replace("\\", "/").startswith(("examples/", "./examples/")):
        return "the docs' examples/ files are archgraph's: 'archgraph examples .' copies them into ./examples"
    return hint


def is_checkpoint_path(text: str | Path) -> bool:
    """True for `*.safetensors` and `*.safetensors.index.json` (by name; the file may not exist):
    a checkpoint, which lists tensors but is not a spec.  (Here, not in archgraph.checkpoint, so
    that telling one apart costs no import.)"""
    name = str(text).lower()
    return name.endswith(".safetensors") or name.endswith(INDEX_SUFFIX)


def spec_dir() -> Path | None:
    """The folder of the built-in specs, or None in a broken installation."""
    for folder in SPEC_DIRS:
        if folder.is_dir():
            return folder
    return None


def builtin_specs() -> dict[str, Path]:
    """Name -> path of every built-in spec."""
    folder = spec_dir()
    return {p.stem: p for p in sorted(folder.glob("*.yaml"))} if folder else {}


def hf_template(name: str) -> Path | None:
    """A Hugging Face family template by its file name (`clip_vision.yaml`), or None: a spec may
    use one as a block, and a spec written by import-hf keeps naming the templates its family's
    template uses."""
    folder = spec_dir()
    if folder is None or "/" in name or "\\" in name or not name.endswith(".yaml"):
        return None
    path = folder / "hf" / name
    return path if path.is_file() else None


LIBRARY = "lib."  # the prefix of a standard library block's name


def library_blocks() -> dict[str, Path]:
    """Name (`lib.attention`) -> path of every block of the standard library (`specs/lib/`)."""
    folder = spec_dir()
    lib = folder / "lib" if folder is not None else None
    return {LIBRARY + p.stem: p for p in sorted(lib.glob("*.yaml"))} if lib is not None and lib.is_dir() else {}


def library_block(name: str, loc: Loc | None = None) -> Path:
    """The file of the standard library block `name` (`lib.attention`), or a SpecError naming the blocks."""
    blocks = library_blocks()
    if name in blocks:
        return blocks[name]
    raise SpecError(f"the standard library has no block '{name}'", loc=loc,
                    hint=did_you_mean(name, blocks) or "its blocks: " + (", ".join(blocks) or "none (a broken installation)"))


def resolve(source: str | Path, relative_to: Path | None = None, loc: Loc | None = None) -> Path:
    """A spec path for `source`: a file (beside `relative_to` when given, else as written), or a
    built-in name."""
    text = str(source)
    path = Path(text)
    candidate = relative_to / path if relative_to is not None and not path.is_absolute() else path
    try:
        if candidate.exists() and not candidate.is_dir():  # a FIFO or a device too: the reader says what it is
            return candidate
    except OSError:  # a name too long for the file system, say
        pass
    if text.startswith(LIBRARY):
        return library_block(text, loc)
    builtins = builtin_specs()
    if text in builtins:
        return builtins[text]
    template = hf_template(text)
    if template is not None:
        return template
    if text.endswith((".yaml", ".yml")) or "/" in text:
        where = f" (looked in {relative_to})" if relative_to is not None else ""
        raise SpecError(f"no spec file '{text}'{where}", loc=loc,
                        hint=missing_hint(text, None) if relative_to is None else None)
    hint = did_you_mean(text, builtins)
    raise SpecError(f"'{text}' is neither a spec file nor a built-in model", loc=loc,
                    hint=hint or ("built-in models: " + ", ".join(builtins) +
                                  " (run 'archgraph zoo')"))
