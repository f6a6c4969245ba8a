"""`archgraph diff A B`: what changed between two designs (nodes by path and role, stacks as
stacks, parameter, FLOP and memory deltas), as text, --json, or a page (-o diff.html)."""
from __future__ import annotations


def add_parser(sub, model_command) -> None:
    c = model_command(sub, "diff", "what changed from model A to model B: nodes added, removed, renamed or "
                      "changed (hyperparameters, tensor shapes), stacks compared as stacks (layers 32 -> 40), "
                      "parameter, FLOP and memory deltas by stack and in total (at --set S=.., default B=1, "
                      "S=512)", nargs="+")
    c.add_argument("-o", "--output", metavar="FILE", help="also write a page (.html): the two models side by side, "
                   "the nodes that differ marked, and the comparison")
    c.set_defaults(handler=run)


def run(args, console) -> int:
    from ..passes.diff import diff
    from ..render.diff import diff_json, diff_table
    from .common import emit, load_model

    from ..errors import SpecError, did_you_mean
    from ..passes.compare import _names

    if len(args.model) != 2:
        raise SpecError(f"diff compares two models, A and B; received {len(args.model)}",
                        hint="e.g. archgraph diff llama-2-7b examples/mistral-7b/config.json "
                             "(archgraph compare takes more)")
    settings = dict(args.settings)
    probes = [load_model(args, name, settings={}) for name in args.model]
    known = {"B", "S"}.union(*(_names(p) for p in probes))
    for key in settings:
        if key not in known:  # a typo would diff the models unchanged
            raise SpecError(f"--set {key}: neither model has a variable or dimension named '{key}'",
                            hint=did_you_mean(key, known) or f"names: {', '.join(sorted(known))}")
    a, b = (load_model(args, name, settings={k: v for k, v in settings.items() if k in p.variables})
            if any(k in p.variables for k in settings) else p for name, p in zip(args.model, probes))
    report = diff(a, b, {k: v for k, v in settings.items() if k not in a.variables and k not in b.variables})
    if args.output:  # refused before anything is printed, as report and render refuse it
        _check_page(args, a, b)
    code = emit(console, args.json, lambda: diff_json(report), lambda: diff_table(report))
    if args.output:
        _page(args, console, a, b, report)
    return code


def _inputs(args, a, b) -> list:
    from pathlib import Path
    return [*(n for n in args.model if Path(n).is_file()), *a.files, *b.files]


def _check_page(args, a, b) -> None:
    from pathlib import Path

    from ..errors import ArchgraphError
    from ..outfile import check_output

    if Path(args.output).suffix.lower() not in (".html", ".htm"):
        raise ArchgraphError(f"the diff page is an HTML page; received '{args.output}'", hint="end the file name with .html")
    check_output(args.output, _inputs(args, a, b))


def _page(args, console, a, b, report) -> None:
    """The page, after the text diff (or --json) was printed: `wrote FILE` follows the text, as
    compare -o follows its table (render, chart and report, which print no table, say only that);
    --json prints only the JSON."""
    from ..outfile import write_output
    from ..render.report import report_data, report_html

    write_output(args.output, report_html(report_data([a, b], diff=report)), inputs=_inputs(args, a, b))
    if not args.json:
        console.print(f"wrote {args.output}", markup=False, highlight=False)
