"""Find, build and check a model: a spec path, a built-in spec's name, or a Hugging Face config.json.

Every model that `load` returns has had its shapes checked: a spec whose shapes do
not fit is refused here, so no command ever counts a model that cannot exist.  A check
the symbolic pass cannot decide for every size (is `2*floor(S/2)` equal to `S`?) is
refused too, or, with `strict=False` (the commands without --strict), made at example
sizes: the model comes back bound to them, with a note naming the constraints that would
prove its shapes for every size (`archgraph.passes.undecided`).

>>> load("gpt2").params().total
124439808
"""
from __future__ import annotations

import contextlib
import gc
from pathlib import Path
from typing import Any, Mapping

from .errors import ArchgraphError, InconclusiveDimError, Loc
from .model import Model
from .numbers import Trace
from .passes.shapes import infer_shapes
from .spec.build import build_model
from .spec.sources import builtin_specs, is_checkpoint_path, resolve  # noqa: F401  (part of this module's interface)
from .spec.yamlload import LocDict, load_file
from .spec.yamlload import load_text as parse_text


def read_parent(name: str, at: Loc, child: Loc) -> LocDict:
    """The spec that `extends: name` (at `at`, in the spec file `child`) means: a file beside the
    child's file, or a built-in spec."""
    return load_file(resolve(name, Path(child.file).parent, at), named=(name, at))


class SpecFiles:
    """Reads the spec files of one load (as `read_parent` does) and keeps the list of those read
    (`Model.files`: an output file must never replace one)."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def spec(self, source: str | Path, named: tuple[str, Loc] | None = None) -> LocDict:
        path = resolve(source)
        self.read.append(str(path))
        return load_file(path, named)

    def parent(self, name: str, at: Loc, child: Loc) -> LocDict:
        return self.spec(resolve(name, Path(child.file).parent, at), named=(name, at))


def load(source: str | Path, settings: Mapping[str, Any] | None = None, *, symbolic: bool = False,
         strict: bool = True) -> Model:
    """Load a spec file, built-in model, Hugging Face config.json or GGUF file; `settings` override variables
    or bind sizes (like --set).  `symbolic` builds over SymInts, for formulas.  `strict=False`: a
    shape check the symbolic pass cannot decide is made at example sizes instead (see above)."""
    from .hf import is_config
    if is_checkpoint_path(source):
        raise ArchgraphError(f"'{source}' is a checkpoint: it lists tensors but has no graph to analyse",
                             hint="use 'archgraph params CHECKPOINT' to count its tensors, or pass the "
                                  "model's config.json or spec (and 'archgraph check SPEC --against "
                                  "CHECKPOINT' to compare them)")
    if is_config(source):
        return load_config(source, settings, symbolic=symbolic, strict=strict)
    if str(source).lower().endswith(".gguf"):  # a llama.cpp model file: its header only
        return load_gguf(source, settings, symbolic=symbolic, strict=strict)
    if str(source).lower().endswith(".onnx"):
        return load_onnx(source, settings, symbolic=symbolic, strict=strict)
    files = SpecFiles()
    model = build(files.spec(source), settings, files.parent, symbolic=symbolic, strict=strict)
    model.files = tuple(files.read)
    return model


def load_text(text: str, filename: str = "<text>", settings: Mapping[str, Any] | None = None, *,
              symbolic: bool = False) -> Model:
    """Load a spec given as YAML text (`filename` names it in errors; `extends:` is relative to it)."""
    files = SpecFiles()
    model = build(parse_text(text, filename), settings, files.parent, symbolic=symbolic)
    model.files = tuple(files.read)
    return model


def build(spec: LocDict, settings: Mapping[str, Any] | None = None, parent=None, *,
          symbolic: bool = False, strict: bool = True) -> Model:
    """Build a parsed spec and check its shapes; a symbolic build records, in the model, the names
    its choices depended on (`decided`) and the relations its checks relied on (`conditions`)."""
    if not symbolic:
        try:
            with _no_gc():
                model = checked(build_model(spec, settings, parent, model_class=Model))
        except InconclusiveDimError as exc:
            if strict:
                raise _with_proof(exc, spec, settings, parent) from None
            return _at_check_sizes(exc, spec, settings, parent)
        model.rebuild = lambda more: build(spec, {**(settings or {}), **more}, parent)
        return model
    try:
        with Trace() as trace, _no_gc():
            model = checked(build_model(spec, settings, parent, symbolic=True, model_class=Model))
    except InconclusiveDimError as exc:
        if strict:
            raise _with_proof(exc, spec, settings, parent) from None
        return _at_check_sizes(exc, spec, settings, parent, symbolic=True)
    # the model's own names (a block's local variable a `when:` reads, lib.attention's `masked`, is none)
    model.decided = trace.frozen & {*model.variables, *model.bindings}
    model.conditions = list(trace.conditions)
    return model


def _proof(error: InconclusiveDimError, spec: LocDict, settings, parent) -> tuple[Model, dict[str, int] | None]:
    """The model with its sizes symbolic, and the divisibility constraints that decide `error` (or None)."""
    from .passes.undecided import proving_divisors

    def unsized() -> Model:
        with _no_gc():
            return build_model(spec, settings, parent, model_class=Model)
    model = unsized()
    return model, proving_divisors(model, error, unsized)


def _with_proof(error: InconclusiveDimError, spec: LocDict, settings, parent) -> InconclusiveDimError:
    """`error` (a check undecided for every size), its fix naming the constraints that would decide it."""
    from .passes.undecided import constraint_text
    divisors = _proof(error, spec, settings, parent)[1]
    if divisors:
        error.hint = f"add '{constraint_text(divisors)}' to the spec, which decides it for every size; or " + \
            (error.hint or "give the sizes with --set")
    return error


def _at_check_sizes(error: InconclusiveDimError, spec: LocDict, settings, parent, symbolic: bool = False) -> Model:
    """The model built (`symbolic` or not) at the sizes `passes.undecided` chooses, when the shape check
    `error` is undecided for every size; with a note of the sizes and the constraints that would decide
    it.  If the check fails at those sizes too, `error` stands, saying so."""
    from .passes.undecided import check_sizes, constraint_text
    unsized, divisors = _proof(error, spec, settings, parent)
    sizes = check_sizes(unsized, divisors)
    shown = ", ".join(f"{n}={v}" for n, v in sizes.items())
    try:
        model = build(spec, {**(settings or {}), **sizes}, parent, symbolic=symbolic)
    except ArchgraphError as failure:
        error.hint = f"at {shown} it fails too ({failure.message}); {error.hint or 'give the sizes with --set'}"
        raise error from None
    where = f"{error.loc}: " if error.loc else ""
    node = f"node '{error.node}': " if error.node else ""
    proof = (f"'{constraint_text(divisors)}' in the spec would decide it for every size" if divisors else
             "no constraint NAME % K == 0 decides it: give the sizes with --set")
    model.notes.append(f"{where}{node}{error.message.split(' (received ')[0]}; checked at {shown} instead; {proof}")
    return model


@contextlib.contextmanager
def _no_gc():
    """Building makes many objects and frees few, and no cycles worth collecting: Python's cycle
    collector would scan the growing heap again and again (a third of the time of a 1M-node build)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def checked(model: Model) -> Model:
    """`model` once its shapes are known to fit (the shape pass raises the located error if not)."""
    from .spec.build import blame_overrides
    try:
        model.checked_shapes = infer_shapes(model)  # kept: `model.shapes()` without sizes is this report
    except ArchgraphError as exc:
        raise blame_overrides(exc, model.source, model.overrides) from None
    return model


def load_onnx(path: str | Path, settings: Mapping[str, Any] | None = None, *, symbolic: bool = False,
              strict: bool = True) -> Model:
    """Build the model an ONNX file describes (`archgraph.fromonnx`; its tensors and count checked against
    the file, not run); `settings` bind its sizes (B, S) like --set."""
    with _onnx_model(path, settings, symbolic=symbolic, strict=strict) as (_, model):
        model.source = str(path)
        model.files = (str(path),)
        return model


def onnx_spec(path: str | Path, build=None):
    """`archgraph.fromonnx.import_onnx` of `path`, checked (`fromonnx.verify`): every tensor of the spec is
    the file's, of its shape, and they count its weights; given `build` (`archgraph.torch.to_module`) and
    with onnxruntime installed, the spec's module holding the file's weights computes onnxruntime's
    outputs to within 1e-4 of their scale.  Returns the `Imported`."""
    from .fromonnx.verify import can_run, same_outputs
    with _onnx_model(path, None) as (made, model):
        if build is not None and can_run():
            same_outputs(made, model, build)
    return made


@contextlib.contextmanager
def _onnx_model(path, settings, **kwargs):
    """(the import, its spec's model) read back from a folder holding the spec and its values file."""
    import tempfile

    from .fromonnx import import_onnx
    from .fromonnx.verify import same_tensors
    made = import_onnx(path)
    with tempfile.TemporaryDirectory() as folder:
        spec = Path(folder) / "spec.yaml"
        made.text.write(spec)
        files = SpecFiles()
        model = build(files.spec(spec), settings, files.parent, **kwargs)
        same_tensors(made, model)
        yield made, model


def load_config(path: str | Path, settings: Mapping[str, Any] | None = None, *, symbolic: bool = False,
                strict: bool = True) -> Model:
    """Build the model a config.json describes; `settings` (like --set) override its values."""
    from .hf import import_file
    return _template_model(import_file(path), path, settings, symbolic, strict, "")


def _template_model(imported, path: str | Path, settings: Mapping[str, Any] | None, symbolic: bool,
                    strict: bool, kind: str) -> Model:
    """The family template `imported` names, built at its variables (`settings` over them), named and
    sourced as the file at `path` (`kind`: ", GGUF" after the model type for a GGUF file)."""
    from .hf import config_error
    try:
        model = load(imported.template, {**imported.variables, **dict(settings or {})}, symbolic=symbolic,
                     strict=strict)
    except ArchgraphError as exc:
        raise config_error(exc, imported, path, settings or {}) from None
    model.name = imported.name
    model.description = f"{imported.architecture} from {Path(str(path)).name} ({imported.model_type}{kind})"
    model.source = str(path)
    model.files = (str(path), *model.files)
    return model


def load_gguf(path: str | Path, settings: Mapping[str, Any] | None = None, *, symbolic: bool = False,
              strict: bool = True) -> Model:
    """The model a GGUF file's header describes (`archgraph.ggufmodel`): its family's template at the
    metadata's values, checked tensor by tensor against the file, with its weights as stored."""
    from .ggufmodel import check_tensors, imported as gguf_imported, stored_weights
    from .ggufread import read_gguf
    gfile = read_gguf(path)
    imported = gguf_imported(path, gfile)
    model = _template_model(imported, path, settings, symbolic, strict, ", GGUF")
    if not set(settings or {}) & set(model.variables):  # --set of a size, not of the model's variables
        check_tensors(model, gfile, imported.model_type)
    model.stored = stored_weights(gfile)
    model.notes.extend(gfile.notes)
    return model
