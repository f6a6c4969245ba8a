"""`archgraph import-hf CONFIG.json [-o SPEC.yaml]`: a Hugging Face config (or a GGUF file's metadata) as an
editable spec."""
from __future__ import annotations

import sys


def add_parser(sub, model_command) -> None:
    c = sub.add_parser("import-hf", help="write a spec from a Hugging Face config.json",
                       description="Write an ordinary archgraph spec from a Hugging Face config.json: the "
                                   "family's template with the config's values as its variables.")
    c.add_argument("config", metavar="CONFIG.json", help="a Hugging Face config.json (or a .gguf file: its metadata)")
    c.add_argument("-o", "--output", metavar="SPEC.yaml", help="write here (default: print the spec)")
    c.set_defaults(handler=run)


def _imported(path):
    """The config (or GGUF file: its metadata as a config) at `path`, imported."""
    from ..ggufread import is_gguf_path
    from ..hf import import_file
    if is_gguf_path(path):
        from ..ggufmodel import imported
        return imported(path)
    return import_file(path)


def spec_text(path) -> str:
    """The spec `import-hf` writes for the config at `path`: the config's model (the family template
    at its values, `hf.specialized`) as YAML text."""
    from pathlib import Path

    from ..hf import specialized
    from ..render.spec_yaml import spec_yaml
    imported, result, comments = specialized(path, _imported(path))
    name = Path(str(path)).name
    header = [f"{imported.architecture} written by `archgraph import-hf {name}`: the",
              f"'{imported.model_type}' family template (specs/hf/{imported.template.name}) evaluated at the",
              "config's values.  Edit freely; `archgraph params` this file."]
    return spec_yaml(header, result.spec, result.variables, comments)


def run(args, console) -> int:
    from ..load import load
    from ..outfile import check_output, write_output

    inputs = [args.config]
    if args.output is not None:
        check_output(args.output, inputs)
    load(args.config)  # the checks of `params` first (a GGUF file's tensors too): no spec of sizes no model can have is written
    text = spec_text(args.config)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    imported = _imported(args.config)
    inputs.append(str(imported.template))  # the family's template, which the spec was written from
    write_output(args.output, text, inputs=inputs)
    from ..names import terminal_text
    print(terminal_text(f"wrote {args.output}: {imported.architecture} ({imported.model_type}); "
                        f"try: archgraph params {args.output}"), file=sys.stderr)
    return 0
