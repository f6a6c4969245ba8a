// The DOT an explorer hands Graphviz: a model's tree (passes.explore) with some blocks open.
// An open block is a cluster holding its body; a closed one a box (a 3-D box when repeated); a
// layer schedule whose runs repeat is one box, or one period in a dashed frame.  Ids are
// `KEY-nID` (a node or block of the tree), `KEY-pID` (a schedule, by its first run), `KEY-iN`
// and `KEY-oN` (the model's Nth input and output): two nodes at one path are two ids, and no
// name is ever part of an id.  Names reach the DOT only escaped, in labels (esc, dotString).
"use strict";

// Graphviz measures text with its Helvetica metrics; a browser draws Helvetica or a metric twin
// (Liberation Sans, Arimo, Nimbus Sans), so the text fits its box
const FONT = "Helvetica";
const SMALL_PT = 10;  // op lines, counts, edge shapes
const REPORT = JSON.parse(document.getElementById("archgraph-data").textContent);

function esc(text) {
  return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function dotHtml(text) {
  // text in an HTML-like DOT label: escaped as HTML, and backslashes doubled (Graphviz replaces \N and \G
  // with the node's and the graph's ids even there)
  return esc(text).replace(/\\/g, "\\\\");
}

function dotString(text) {
  // a quoted DOT label: &, backslashes and quotes escaped (a name ending in "\\" or holding a quote stays one string)
  return `"${String(text).replace(/&/g, "&amp;").replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

function human(n) {
  for (const [unit, size] of [["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]]) {
    if (Math.abs(n) >= size) return (n / size).toFixed(2) + " " + unit;
  }
  return String(n);
}

function flopsText(n) {
  // as the tables write FLOPs (render/flops.py): 12.35 GFLOP
  for (const [unit, size] of [["PFLOP", 1e15], ["TFLOP", 1e12], ["GFLOP", 1e9], ["MFLOP", 1e6], ["KFLOP", 1e3]]) {
    if (Math.abs(n) >= size) return (n / size).toFixed(2) + " " + unit;
  }
  return n + " FLOP";
}

function bytesText(n) {
  for (const [unit, size] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) {
    if (n >= size) return (n / size).toFixed(2) + " " + unit;
  }
  return n + " B";
}

const MEASURES = {
  share: {title: "share of the parameters", value: n => n.total, total: m => m.total, text: human, unit: "params"},
  flops: {title: "share of the forward FLOPs", value: n => n.flops, total: m => m.flops, text: flopsText, unit: ""},
  memory: {title: "share of the output bytes (bf16)", value: n => n.bytes, total: m => m.bytes, text: bytesText,
           unit: "bytes out"},
  category: {title: "parameters by category"},
};

function shade(measure, model, node) {
  // {fill, ink, label}: the bin of the node's share of the measure (or its category's colour)
  if (measure === "category") {
    const has = node.kind === "block" ? node.total > 0 : node.has_params && node.params > 0;
    return has ? {fill: REPORT.palette.categories[node.category] || REPORT.palette.other, ink: "#000000",
                  label: node.category} : {fill: "#ffffff", ink: "#000000", label: "no parameters"};
  }
  const m = MEASURES[measure], value = m.value(node), total = m.total(model);
  if (!value) return {fill: "#ffffff", ink: "#000000", label: measure === "share" ? "no parameters" : "none"};
  const share = total ? value / total : 0;
  const bins = REPORT.palette.bins;
  const [, label, fill, ink] = bins.find(([low]) => share >= low) || bins[bins.length - 1];
  return {fill, ink, label};
}

function argText(args) {
  return Object.entries(args).map(([k, v]) => `${k}=${Array.isArray(v) ? "(" + v.join(", ") + ")" : v}`);
}

function opText(node) {
  // the op, then its arguments (naming and numerics left out) in lines of about 34 characters
  const hidden = new Set(REPORT.palette.hidden);
  const lines = [node.op];
  for (const part of argText(Object.fromEntries(Object.entries(node.args).filter(([k]) => !hidden.has(k))))) {
    if (lines.length > 1 && lines[lines.length - 1].length + part.length + 2 <= 34) lines[lines.length - 1] += ", " + part;
    else lines.push(part);
  }
  return lines;
}

function short(name, width = 48) {
  if (name.length <= width) return name;
  const half = Math.floor((width - 1) / 2);
  return name.slice(0, half) + "…" + name.slice(name.length - half);
}

function label(lines, ink = "#000000") {
  // an HTML-like label: [text, small] lines, the first ones bold
  const rows = lines.map(([text, small]) => `<tr><td>${small ? `<font point-size="${SMALL_PT}">${dotHtml(text)}</font>`
    : `<b>${dotHtml(text)}</b>`}</td></tr>`).join("");
  const table = `<table border="0" cellborder="0" cellspacing="0" cellpadding="1">${rows}</table>`;
  return "<" + (ink === "#000000" ? table : `<font color="${ink}">${table}</font>`) + ">";
}

function times(node) {
  return node.repeat > 1 ? ` × ${node.repeat}${node.shared ? " shared" : ""}` : node.shared ? " shared" : "";
}

function counts(node) {
  return node.repeat > 1 && !node.shared ? `${human(node.params)} params each · ${human(node.total)} total`
    : `${human(node.total)} params`;
}

function visit(graph, fn) {
  for (const node of graph.nodes) {
    fn(node);
    if (node.kind === "block" && node.body) visit(node.body, fn);
  }
}

function sliced(node, from, open) {
  // a block call's input it slices per repetition (`each: dim`), labelled as PyTorch writes the slice:
  // "[B, S, 42, 256][:, :, i]" into its box, "[B, S, 256] = [:, :, i]" inside it when open
  if (!node.each) return from;
  return from.map((f, k) => {
    const dim = node.each[k];
    if (dim === null || dim === undefined || !f || !f.shape) return f;
    const rank = f.shape.split(",").length, at = ((dim % rank) + rank) % rank;
    const pick = `[${[...Array(at).fill(":"), "i"].join(", ")}]`;
    return {id: f.id, shape: open ? `${node.given[k]} = ${pick}` : `${f.shape}${pick}`};
  });
}

function drawnBoxes(graph, open, folds) {
  // the boxes DotWriter draws of `graph` with the blocks of `open` open and schedules as `folds` says
  let n = 0;
  const skip = new Set();
  for (const node of graph.nodes) {
    if (skip.has(node.name)) continue;
    if (node.pattern && folds.get(node.id) !== "all") {
      const state = folds.get(node.id);
      (state ? node.pattern.skipped : [...node.pattern.drawn, ...node.pattern.skipped]).forEach(m => skip.add(m));
      if (!state) { n += 1; continue; }
    }
    if (node.kind === "block" && node.body && open.has(node.id)) n += drawnBoxes(node.body, open, folds);
    else if (!(node.kind === "block" && !node.body)) n += 1;
  }
  return n;
}

class DotWriter {
  // view: {key, expanded: Set of open block ids, folds: Map of schedule states, measure}
  constructor(model, view) {
    this.model = model;
    this.view = view;
    this.out = [];
    this.edges = new Map();
    this.shades = new Map();  // label -> shade of every box drawn (the legend's entries)
  }

  write() {
    const inputs = new Map();
    this.model.inputs.forEach((input, i) => {
      const id = `"${this.view.key}-i${i}"`;
      this.terminal(id, input.name, `${input.shape || ""} ${input.dtype}`);
      inputs.set(input.name, {id, shape: input.shape});
    });
    const last = this.scope(this.model.graph, inputs, 0);
    this.model.outputs.forEach((output, i) => {
      const id = `"${this.view.key}-o${i}"`;
      this.terminal(id, output.name, (last[i] && last[i].shape) || "");
      this.edge(last[i], id);
    });
    return `digraph G { graph [rankdir=TB, newrank=true, nodesep=0.3, ranksep=0.35, bgcolor="transparent", ` +
      `fontname="${FONT}", fontsize=12]; node [shape=box, style="rounded,filled", fontname="${FONT}", ` +
      `fontsize=12, color="#555555", margin="0.12,0.04"]; edge [fontname="${FONT}", fontsize=${SMALL_PT}, ` +
      `fontcolor="#444444", color="#555555", arrowsize=0.6];\n${this.out.join("\n")}\n` +
      `${Array.from(this.edges.values()).join("\n")}\n}`;
  }

  terminal(id, name, text) {
    this.out.push(`${id} [id=${id}, shape=oval, fillcolor="#f0f0f0", label=${label([[name], [text, true]])}]`);
  }

  edge(from, to) {
    // an edge labelled with the shape it carries; once per pair of ends
    if (!from) return;
    const key = `${from.id} -> ${to}`;
    if (!this.edges.has(key)) this.edges.set(key, `${key} [label=${dotString(from.shape ? ` ${from.shape} ` : "")}]`);
  }

  box(id, node, lines, attrs = "") {
    // shaded by what the node stands for: in one period of a schedule, every run it repeats as
    const k = this.scale;
    const s = shade(this.view.measure, this.model, k ? {...node, total: node.total * k.total, flops: node.flops * k.flops,
                                                           bytes: node.bytes * k.bytes} : node);
    this.shades.set(s.label, s);
    this.out.push(`${id} [id=${id}, fillcolor="${s.fill}", ${attrs}label=${label(lines, s.ink)}]`);
  }

  scope(graph, ins, depth) {
    // draws `graph` (its inputs fed by `ins`: name -> end) and returns the ends of its outputs
    const outs = new Map(), skip = new Set();
    const end = ([name, index]) => outs.has(name) ? outs.get(name)[index] : index === 0 ? ins.get(name) : undefined;
    const byName = new Map(graph.nodes.map(n => [n.name, n]));
    for (const node of graph.nodes) {
      if (skip.has(node.name)) continue;
      const state = node.pattern && this.view.folds.get(node.id);
      if (!node.pattern || state === "all") {
        this.node(node, end, outs, depth);
        continue;
      }
      const runs = [...node.pattern.drawn, ...node.pattern.skipped].map(name => byName.get(name));
      runs.forEach(r => skip.add(r.name));
      if (state) this.period(node, byName, end, outs, depth);
      else this.schedule(node, runs, end, outs);
    }
    return graph.outputs.map(end);
  }

  node(node, end, outs, depth) {
    const open = node.kind === "block" && this.view.expanded.has(node.id);
    const from = sliced(node, node.inputs.map(end), open), id = `"${this.view.key}-n${node.id}"`;
    if (node.kind === "block" && !node.body) {  // repeated 0 times: hands its inputs on
      outs.set(node.name, from);
      return;
    }
    if (open) {
      this.cluster(node, from, outs, depth);
      return;
    }
    if (node.kind === "op") {
      const lines = [[short(node.name)], ...opText(node).map(t => [t, true])];
      if (node.params) lines.push([`${human(node.params)} params`, true]);
      const tied = node.tensors.filter(t => t.tied_to).map(t => t.name);
      if (tied.length) lines.push([`tied: ${tied.join(", ")}`, true]);
      this.box(id, node, lines);
    } else {
      this.box(id, node, [[short(node.label) + times(node)], [node.block, true], [counts(node), true]],
               `shape=${node.repeat > 1 ? "box3d" : "box"}, style=filled, `);
    }
    from.forEach((f, k) => (!node.reads || node.reads[k]) && this.edge(f, id));  // not from an input it never reads
    outs.set(node.name, node.out.map(shape => ({id, shape})));
  }

  cluster(node, from, outs, depth) {
    // an open block: its body inside a frame titled with its name, repetitions and counts
    const id = `${this.view.key}-n${node.id}`;
    const text = node.repeat > 1 && !node.shared ? counts(node) : `${human(node.total)} params`;
    // a table, as a box's label is: lines apart by its padding (<br/> lines' text boxes overlapped by 2 px)
    const title = `<table border="0" cellborder="0" cellspacing="0" cellpadding="1"><tr><td align="left">` +
      `<b>${dotHtml(short(node.label))}${dotHtml(times(node))}</b>  <i>${dotHtml(node.block)}</i></td></tr>` +
      `<tr><td align="left"><font point-size="${SMALL_PT}">${dotHtml(text)}</font></td></tr></table>`;
    this.out.push(`subgraph "cluster_${id}" { id="${id}"; label=<${title}>; labeljust="l"; style="rounded,filled"; ` +
                  `fillcolor="${depth % 2 ? "#f7f7f7" : "#ececec"}"; color="#999999"; margin=10;`);
    const inner = new Map(node.body.inputs.map((name, i) => [name, from[i]]));
    const ends = this.scope(node.body, inner, depth + 1);
    this.out.push("}");
    outs.set(node.name, ends.map((e, i) => e && {id: e.id, shape: node.out[i] || e.shape}));
  }

  schedule(first, runs, end, outs) {
    // a schedule whose runs repeat, as one box: edges in from what its runs read outside it
    const p = first.pattern, id = `"${this.view.key}-p${first.id}"`;
    const sum = key => runs.reduce((a, r) => a + r[key], 0);
    const whole = {kind: "block", total: sum("total"), flops: sum("flops"), bytes: sum("bytes"), category: first.category};
    this.box(id, whole, [[`${p.segment}.${p.start}..${p.start + p.layers - 1} × ${p.layers}`],
                         [p.note, true],
                         ...Object.entries(p.differ || {}).map(([k, v]) => [`${k} ${v}`, true]),
                         [`${human(whole.total)} params`, true]], "shape=box3d, style=filled, ");
    const inside = new Set(runs.map(r => r.name));
    runs.forEach(r => r.inputs.filter((ref, k) => !inside.has(ref[0]) && (!r.reads || r.reads[k]))
      .forEach(ref => this.edge(end(ref), id)));
    runs.forEach(r => outs.set(r.name, r.out.map(shape => ({id, shape}))));
  }

  period(first, byName, end, outs, depth) {
    // one period of a repeating schedule in a dashed frame; the runs it stands for hand on its last run's ends
    const p = first.pattern, id = `${this.view.key}-p${first.id}`;
    this.out.push(`subgraph "cluster_${id}" { id="${id}"; label=<<b>${dotHtml(p.label)}</b>>; labeljust="l"; ` +
                  `style="rounded,dashed"; color="#777777"; margin=10;`);
    const runs = [...p.drawn, ...p.skipped].map(name => byName.get(name)), outer = this.scale;
    p.drawn.forEach((name, j) => {
      // run j stands for runs j, j + period, ...: its boxes are shaded by all of them (the same body)
      const node = byName.get(name), mine = runs.filter((r, k) => k % p.drawn.length === j);
      const ratio = key => node[key] ? mine.reduce((a, r) => a + r[key], 0) / node[key] : 1;
      const o = outer || {total: 1, flops: 1, bytes: 1};
      this.scale = {total: o.total * ratio("total"), flops: o.flops * ratio("flops"), bytes: o.bytes * ratio("bytes")};
      this.node(node, end, outs, depth);
      this.scale = outer;
    });
    this.out.push("}");
    const last = outs.get(p.drawn[p.drawn.length - 1]);
    p.skipped.forEach(name => outs.set(name, byName.get(name).out.map((shape, i) => ({id: last[i].id, shape}))));
  }
}
