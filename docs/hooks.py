"""MkDocs hooks: the pages made from the code when the site is built, so they cannot go stale.

- `ops/`: the op reference, one page per op family (a module of `archgraph/ops/`), one entry
  per op, from the same declarations and `archgraph.ops.help.describe` that `archgraph ops NAME`
  prints (its docstring, arguments with their comments, inputs, tensors, an example), with its
  first use in a built-in model, example or template (input and output shapes, FLOPs, from the
  same passes as `archgraph shapes` and `flops`) and its shape rule, FLOPs rule and PyTorch forward.
- the diagram of a spec a page shows (`# spec: NAME.yaml`) where the page shows `NAME.svg`.
- `gallery.md` and `gallery/*.svg`: the built-in models and the YAML designs in `examples/`,
  each drawn by `archgraph render` with Graphviz's `dot` (a missing `dot` fails the build).

Registered in mkdocs.yml (`hooks:`); the site documents the checkout it is built from.
"""
from __future__ import annotations

import inspect
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's archgraph, not another installed copy
    sys.path.insert(0, str(ROOT))

NOT_OPS = {"base", "help", "__init__"}  # modules of archgraph/ops/ that declare no op


# -- the op reference -----------------------------------------------------------------------------
def op_families() -> dict[str, list[str]]:
    """module name -> the names of the ops it declares, in the order of the registry's names."""
    from archgraph.ops import REGISTRY
    out: dict[str, list[str]] = {}
    for name, cls in sorted(REGISTRY.items()):
        out.setdefault(cls.__module__.rsplit(".", 1)[-1], []).append(name)
    return dict(sorted(out.items()))


TITLES = {"activation": "Activations", "attention": "Attention", "bags": "Embedding bags", "binary": "Two-tensor functions", "conv": "Convolutions",
          "disentangled": "Disentangled attention", "einsum": "Einsum", "elementwise": "Elementwise (broadcasting)",
          "embedding": "Embeddings and positions", "fft": "Fourier transforms", "encoders": "Parameters and buffers",
          "indexing": "Slices and singleton dims", "latent_attention": "Latent attention", "layout": "Rearranging", "linear": "Linear",
          "math": "Arithmetic", "mlp": "Feed-forward and MoE", "norm": "Normalisation", "pointwise": "Pointwise functions",
          "pool": "Pooling",
          "recurrent": "Fixed-state layers", "reduce": "Reductions", "rotary": "Rotary positions", "scan": "Running reductions",
          "routing": "Routing by index", "sampling": "Sampling and distances", "scatter": "Indexing and writes", "signal": "Signals", "ssm": "State-space mixers",
          "tensor": "Tensor plumbing", "windows": "Windows (Swin)"}  # the nav's short names


def _module_title(module: str) -> str:
    """The family's short name in the nav (a new module shows as its file name until named here)."""
    return TITLES.get(module, module)


def _module_doc(module: str) -> str:
    """The module's docstring: what the family is, as its author wrote it."""
    import importlib
    return inspect.cleandoc(importlib.import_module(f"archgraph.ops.{module}").__doc__ or "")


def _rule_source(cls, method: str) -> str | None:
    """The source of `method` as the op (or the op class it inherits it from) declares it; None
    where it is the base class's (no FLOPs)."""
    from archgraph.ops.base import Op
    for klass in cls.__mro__:
        if method in vars(klass):
            if klass is Op:
                return None
            return textwrap.dedent(inspect.getsource(vars(klass)[method])).rstrip()
    return None


def _md(text: str) -> str:
    """Text for a Markdown table cell: no line breaks or bare pipes."""
    return " ".join(text.split()).replace("|", "\\|")


def _doc_md(doc: str) -> str:
    """The op's docstring as Markdown paragraphs (its line breaks are the source's, not the reader's)."""
    return "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n") if p.strip())


def op_entry(name: str) -> str:
    """One op's entry: what `archgraph ops NAME` prints, and its FLOPs rule and PyTorch forward."""
    from archgraph.ops import REGISTRY
    from archgraph.ops.help import describe
    cls = REGISTRY[name]
    h = describe(name)
    lines = [f"## {name}", ""]
    meta = f"Category `{h.category}`"
    if h.aliases:
        meta += " · also known as " + ", ".join(f"`{a}`" for a in h.aliases)
    lines += [meta, "", _doc_md(h.doc) or "(no description)", ""]
    if h.hyperparameters:
        lines += ["| argument | meaning | default | type |", "|---|---|---|---|"]
        for arg, typ, default, meaning in h.hyperparameters:
            shown = "required" if default is None else f"`{default}`"
            lines.append(f"| `{arg}` | {_md(meaning)} | {shown} | `{typ.replace(' | ', ' or ')}` |")
    else:
        lines.append("Arguments: none.")
    inputs = ", ".join(f"`{n}`" + ("" if required else " (optional)") for n, required in h.inputs)
    lines += ["", f"**Inputs** (`in:`, in this order or by name): {inputs or 'none'}.", ""]
    for title, rows in (("Tensors", h.tensors), ("Buffers", h.buffers)):
        if rows:
            lines.append(f"**{title}** of the example, sizes in its arguments: "
                         + ", ".join(f"`{t}` [{', '.join(shape)}]" for t, shape in rows) + ".")
            lines.append("")
    if not h.tensors and not h.buffers:
        lines += ["**Tensors**: none (no parameters).", ""]
    flops = _rule_source(cls, "flops")
    shape = _rule_source(cls, "infer_shape")
    lines += ["**Example**:", "", "```yaml", h.example, "```", ""]
    lines += _use_md(name)
    lines += [f"??? note \"Shape rule ({cls.__name__}.infer_shape)\"", "", "    ```python",
              textwrap.indent(shape or "(none)", "    "), "    ```", ""]
    if flops is None:
        lines += ["**FLOPs**: none counted (no arithmetic worth counting: it moves or makes values).", ""]
    else:
        lines += ["??? note \"FLOPs (2 per multiply-accumulate; inputs and outputs are shapes)\"", "",
                  "    ```python", textwrap.indent(flops, "    "), "    ```", ""]
    forward = _rule_source(cls, "forward")
    if forward is not None:
        lines += ["??? note \"PyTorch equivalent (the forward archgraph.torch runs)\"", "",
                  "    ```python", textwrap.indent(forward, "    "), "    ```", ""]
    return "\n".join(lines)


_USES: dict | None = None


def _model_sources() -> list[tuple[str, str]]:
    """(what to load, how the page names it): the built-in models, the examples, the family templates
    at their own defaults, in that order (the first model that uses an op shows it)."""
    from archgraph.load import builtin_specs
    out = [(name, f"`{name}`") for name in sorted(builtin_specs())]
    out += [(str(p), f"`examples/{p.name}`") for p in sorted((ROOT / "examples").glob("*.yaml"))]
    out += [(str(p), f"`examples/{p.parent.name}/config.json`")
            for p in sorted((ROOT / "examples").glob("*/config.json"))]
    from archgraph.hf import template_files
    out += [(str(p), f"the template `specs/hf/{p.name}` at its defaults") for p in template_files()]
    return out


def op_uses() -> dict:
    """op name -> (model, node path, op, input shapes, output shapes, FLOPs) of its first use, with
    symbolic sizes, computed by the same passes as `archgraph shapes` and `flops`."""
    global _USES
    if _USES is None:
        import archgraph
        from archgraph.errors import ArchgraphError
        from archgraph.passes.flops import counted, op_flops
        _USES = {}
        for source, label in _model_sources():
            try:
                run = archgraph.load(source).shapes().run
            except ArchgraphError:  # a template that needs a config's values: no example from it
                continue
            for path, node, ins, outs, _ in counted(run):
                if node.op.op_name not in _USES:
                    _USES[node.op.op_name] = (label, path, node.op, ins, outs, op_flops(node, ins, outs, path))
    return _USES


def _use_md(name: str) -> list[str]:
    from archgraph.dims import fmt, fmt_shape
    use = op_uses().get(name)
    if use is None:
        return ["**In a model**: no built-in model, example or template uses it at its defaults; the shape "
                "rule below says what it accepts.", ""]
    label, path, op, ins, outs, flops = use
    fields = type(op).hyperparameters()
    set_ = ", ".join(f"{k}={getattr(op, k)!r}" for k, f in fields.items()
                     if getattr(f, "default", None) != getattr(op, k))
    shapes = lambda shapes: ", ".join(f"`{fmt_shape(s)}`" for s in shapes) or "none"  # noqa: E731
    flops_text = f"`{fmt(flops)}`".replace("*", "·") if not isinstance(flops, int) else f"{flops:,}"
    return [f"**In a model**: {label}, node `{path}`: `{name}({set_})`; inputs {shapes(ins)} → "
            f"outputs {shapes(outs)}; forward FLOPs {flops_text}.", ""]


def ops_index(families: dict[str, list[str]]) -> str:
    from archgraph.ops import REGISTRY
    from archgraph.ops.help import summary
    lines = ["# Op reference", "",
             f"Every op a spec can use ({sum(map(len, families.values()))} of them), generated from its "
             "declaration in `archgraph/ops/` when this site is built: the same text `archgraph ops NAME` "
             "prints. Each entry gives what the op computes, each argument in a sentence, its inputs, "
             "its tensors as formulas of its arguments, its shape rule, its FLOPs rule, the PyTorch "
             "code it runs as (`archgraph.torch`) and an example line.", "",
             "| op | family | what it computes |", "|---|---|---|"]
    rows = []
    for module, names in families.items():
        for name in names:
            rows.append((name, f"| [`{name}`]({module}.md#{name}) | [{module}]({module}.md) | "
                               f"{_md(summary(REGISTRY[name]))} |"))
    lines += [row for _, row in sorted(rows)]
    return "\n".join(lines) + "\n"


def family_page(module: str, names: list[str]) -> str:
    title = _module_title(module)
    head = [f"# {title}: ops", "", _doc_md(_module_doc(module)), "", "Ops: " + ", ".join(f"[`{n}`](#{n})" for n in names) + ".", ""]
    return "\n".join(head) + "\n" + "\n\n".join(op_entry(n) for n in names) + "\n"


# -- the gallery ------------------------------------------------------------------------------------
def gallery_models() -> list[tuple[str, str]]:
    """(name as `archgraph` takes it, file name in the site) of each built-in model and example."""
    from archgraph.load import builtin_specs
    out = [(name, name) for name in sorted(builtin_specs())]
    out += [(f"examples/{p.name}", p.stem) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    out += [(f"examples/{p.parent.name}/config.json", p.parent.name)
            for p in sorted((ROOT / "examples").glob("*/config.json"))]
    return out


def written(args: list[str], suffix: str, cwd: Path = ROOT) -> bytes:
    """What `archgraph ARGS -o FILE.suffix` writes, run in `cwd` as a user runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"out{suffix}"
        done = subprocess.run([sys.executable, "-m", "archgraph.cli", *args, "-o", str(out)],
                              cwd=cwd, capture_output=True, text=True, env=_env(), check=False)
        if done.returncode != 0:
            raise RuntimeError(f"archgraph {' '.join(args)} failed: {done.stderr.strip()}")
        return out.read_bytes()


def render_svg(model: str, cwd: Path = ROOT) -> bytes:
    """`archgraph render MODEL -o x.svg` (Graphviz's dot draws it)."""
    return written(["render", model], ".svg", cwd)


REPORT = ["gpt2", "bert-base-uncased", "t5-small"]  # the gallery's report: a decoder, an encoder, both


def _env() -> dict[str, str]:
    import os
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def gallery_page(models: list[tuple[str, str]]) -> str:
    import archgraph
    lines = ["# Gallery", "",
             "The built-in models (`archgraph zoo` lists them), the designs in `examples/` and its "
             "Hugging Face config.json files, each "
             "drawn by `archgraph render NAME -o NAME.svg` when this site is built. A repeated block "
             "is drawn once with its `× N`; edges carry symbolic shapes; nodes are shaded by their "
             "share of the parameters. Click a diagram to open it at full size.", "",
             f"The same models to explore: [the HTML report of {', '.join(REPORT)}](gallery/report.html), "
             f"written by `archgraph report {' '.join(REPORT)} -o report.html` (one file that opens without "
             "a network: the comparison, then each model's structure, whose blocks open in place on a "
             "click).", ""]
    for model, stem in models:
        m = archgraph.load(str(ROOT / model) if model.startswith("examples/") else model)
        total = m.params().total
        lines += [f"## {stem}", "", _md(m.description or ""), "",
                  f"{total:,} parameters · `archgraph params {model}`", "",
                  f"[![{stem} diagram](gallery/{stem}.svg){{ loading=lazy }}](gallery/{stem}.svg)", ""]
    return "\n".join(lines)


def page_diagrams(config) -> list[File]:
    """`DIR/NAME.svg` for each page in DIR that shows `](NAME.svg)` of a spec it declares."""
    sys.path.insert(0, str(ROOT / "tools"))
    import doc_blocks
    specs = doc_blocks.spec_blocks()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        doc_blocks.write_specs(Path(tmp))
        for name, (page, text, _) in specs.items():
            stem = name[:-len(".yaml")]
            if f"]({stem}.svg)" in page.read_text():
                where = page.parent.relative_to(doc_blocks.DOCS) / f"{stem}.svg"
                out.append(File.generated(config, where.as_posix(), content=render_svg(name, Path(tmp))))
    return out


# -- mkdocs events ----------------------------------------------------------------------------------
def on_config(config):
    """The op reference's pages in the nav, under the section holding `ops/index.md`."""
    families = op_families()
    for entry in config["nav"]:
        if isinstance(entry, dict):
            for key, value in entry.items():
                if value == "ops/index.md":
                    entry[key] = [{"All ops": "ops/index.md"}, {"By family": [
                        {_module_title(m): f"ops/{m}.md"} for m in families]}]
    return config


def on_files(files, config):
    families = op_families()
    files.append(File.generated(config, "ops/index.md", content=ops_index(families)))
    for module, names in families.items():
        files.append(File.generated(config, f"ops/{module}.md", content=family_page(module, names)))
    for file in page_diagrams(config):
        files.append(file)
    models = gallery_models()
    files.append(File.generated(config, "gallery.md", content=gallery_page(models)))
    for model, stem in models:
        files.append(File.generated(config, f"gallery/{stem}.svg", content=render_svg(model)))
    files.append(File.generated(config, "gallery/report.html", content=written(["report", *REPORT], ".html")))
    return files

