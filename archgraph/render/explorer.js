// The model explorer of the archgraph report (explorer_dot.js writes its DOT): a model's block hierarchy drawn by Graphviz
// (viz.js, in WebAssembly), collapsed to fit; a block expands in place on click and collapses
// again; pan and zoom (d3-zoom); nodes shaded by their share of the parameters, FLOPs or output
// bytes, with a legend; hovering shows a node's op, arguments, tensors and shapes; a search box
// finds a node by its path.  Every drawn node and block carries data-path (params --json's path).
// A drawing holds at most MAX_BOXES boxes: "expand all" opens in steps, and a click or a search that
// would draw more closes the blocks not around its node.
"use strict";

const MIN_LABEL_PX = 10;     // the smallest label (10 pt) is drawn at least this large at first view
const MAX_SCALE = 1.15;      // and a small drawing no larger than this
const FIRST_VIEW_BOXES = 24; // blocks called once open at first while the drawing stays this small
const STEP_BOXES = 250;      // "expand all" adds at most this many boxes a press, outermost blocks first
const MAX_BOXES = 600;       // a drawing holds at most this many boxes: Graphviz's layout time grows
                             // faster than the boxes (2,242 froze the tab for minutes)

class Explorer {
  constructor(root, model, viz, key, marks) {
    this.root = root;
    this.marks = marks || null;  // path (layer indices left out) -> changed, only, design, renamed (archgraph diff -o)
    this.model = model;
    this.viz = viz;
    this.key = key;
    this.measure = "share";
    this.byId = new Map();
    this.parent = new Map();
    this.patternOf = new Map();  // id of a run of a repeating schedule -> the schedule's first run
    this.folds = new Map();      // first run's id -> "period" (one period drawn) or "all"; absent: one box
    const walk = (graph, parent) => graph.nodes.forEach(node => {
      this.byId.set(node.id, node);
      this.parent.set(node.id, parent);
      if (node.pattern) {
        const runs = new Set([...node.pattern.drawn, ...node.pattern.skipped]);
        graph.nodes.filter(n => runs.has(n.name)).forEach(n => this.patternOf.set(n.id, node));
      }
      if (node.kind === "block" && node.body) walk(node.body, node);
    });
    walk(model.graph, null);
    this.expanded = this.firstView();
    this.build();
    this.draw();
  }

  // -- which blocks are open ------------------------------------------------------------------
  firstView() {
    return this.opened(this.model.graph, new Set());
  }

  opened(graph, open) {
    // `open` with the blocks in `graph` called once opened too, outermost first, while `graph`
    // draws in at most FIRST_VIEW_BOXES boxes; a repeated block, a stack's layer (T5's
    // encoder.block.0) or a run of a layer schedule (Gemma 3's layers.5) stays one box
    const once = g => g.nodes.filter(n => n.kind === "block" && n.body && n.repeat === 1 && !n.scheduled && !n.layer);
    let frontier = once(graph);
    while (frontier.length) {
      const next = [];
      for (const node of frontier) {
        open.add(node.id);
        if (drawnBoxes(graph, open, this.folds) > FIRST_VIEW_BOXES) open.delete(node.id);
        else next.push(...once(node.body));
      }
      frontier = next;
    }
    return open;
  }

  // -- how much is drawn: never more than MAX_BOXES boxes ----------------------------------------
  drawn() {
    return drawnBoxes(this.model.graph, this.expanded, this.folds);
  }

  openAll() {
    // blocks, and schedules (one period), open outermost first, level by level, while this press adds
    // at most STEP_BOXES boxes and the drawing holds at most MAX_BOXES; pressed again, it opens more
    const before = this.drawn(), limit = Math.min(MAX_BOXES, before + STEP_BOXES);
    if (before > MAX_BOXES) return;  // nothing is drawn, and the view says why
    let more = false;  // a block left closed would open on the next press
    const fits = (set, key, value) => {
      set instanceof Map ? set.set(key, value) : set.add(key);
      const boxes = this.drawn();
      if (boxes <= limit) return true;
      more ||= boxes <= MAX_BOXES;
      set.delete(key);
      return false;
    };
    for (let level = this.model.graph.nodes; level.length;) {
      const next = [];
      for (const node of level) {
        if (node.pattern && !this.folds.has(node.id)) fits(this.folds, node.id, "period");
        if (node.body && (this.expanded.has(node.id) || fits(this.expanded, node.id))) next.push(...node.body.nodes);
      }
      level = next;
    }
    const boxes = this.drawn(), count = n => n.toLocaleString("en-US");
    let closed = 0;
    visit(this.model.graph, n => { closed += Boolean(n.body && !this.expanded.has(n.id) || n.pattern && !this.folds.has(n.id)); });
    this.status.textContent = !closed ? `every block open (${count(boxes)} boxes)`
      : `${count(boxes)} boxes drawn, ${count(closed)} block${closed === 1 ? "" : "s"} closed: ` + (more
        ? "expand all again to open more" : `a drawing holds at most ${count(MAX_BOXES)} boxes; click a block to open it`);
    if (boxes !== before) this.draw();
  }

  within(id, change) {
    // `change` opens blocks around node `id`: past MAX_BOXES only the blocks around `id` stay open, and
    // when even those draw more, nothing changes; the note for the status, or null when nothing changed
    const before = [new Set(this.expanded), new Map(this.folds)];
    change();
    if (this.drawn() <= MAX_BOXES) return "";
    const around = new Set();
    for (let n = this.byId.get(id); n; n = this.parent.get(n.id)) {
      around.add(n.id);
      if (this.patternOf.has(n.id)) around.add(this.patternOf.get(n.id).id);
    }
    const inside = x => { for (let n = this.byId.get(x); n; n = this.parent.get(n.id)) if (n.id === id) return true; };
    this.expanded = new Set([...this.expanded].filter(x => around.has(x) || inside(x)));
    this.folds = new Map([...this.folds].filter(([x]) => around.has(x) || inside(x)));
    const boxes = this.drawn(), most = MAX_BOXES.toLocaleString("en-US");
    if (boxes <= MAX_BOXES) return `the other blocks closed: a drawing holds at most ${most} boxes`;
    [this.expanded, this.folds] = before;
    this.status.textContent = `${this.byId.get(id).path} needs a drawing of ${boxes.toLocaleString("en-US")} boxes; ` +
      `a drawing holds at most ${most}: the table of parameters lists every node`;
    return null;
  }

  // -- the page around the drawing --------------------------------------------------------------
  build() {
    this.root.innerHTML = "";
    const bar = document.createElement("div");
    bar.className = "explorer-tools";
    const list = `${this.key}-paths`;
    bar.innerHTML = `<label>find <input type="search" class="find" list="${list}" placeholder="node path or name"
      aria-label="find a node by its path"></label><datalist id="${list}"></datalist>
      <label>shade by <select class="measure"><option value="share">parameters</option>
      <option value="flops">FLOPs</option><option value="memory">memory (output bytes)</option>
      <option value="category">category</option></select></label>
      <button type="button" data-action="open">expand all</button>
      <button type="button" data-action="close">collapse all</button>
      <button type="button" data-action="fit">fit</button> <span class="status" role="status"></span>`;
    this.root.appendChild(bar);
    const paths = new Set();
    visit(this.model.graph, node => paths.add(node.path));
    bar.querySelector("datalist").innerHTML = Array.from(paths).map(p => `<option value="${esc(p)}">`).join("");
    this.view = document.createElement("div");
    this.view.className = "explorer-view";
    this.root.appendChild(this.view);
    this.legend = document.createElement("div");
    this.legend.className = "legend shading";
    this.root.appendChild(this.legend);
    this.tip = document.createElement("div");
    this.tip.className = "tip";
    this.tip.hidden = true;
    this.root.appendChild(this.tip);
    this.status = bar.querySelector(".status");
    const find = bar.querySelector("input.find");
    find.addEventListener("change", () => this.find(find.value));
    find.addEventListener("keydown", e => { if (e.key === "Enter") this.find(find.value); });
    bar.querySelector("select.measure").addEventListener("change", e => { this.measure = e.target.value; this.draw(); });
    bar.querySelectorAll("button").forEach(b => b.addEventListener("click", () => {
      if (b.dataset.action === "open") this.openAll();
      else if (b.dataset.action === "close") {
        this.expanded = new Set();
        this.folds = new Map();
        this.status.textContent = "";
        this.draw();
      } else this.fit();
    }));
  }

  dot() {
    const writer = new DotWriter(this.model, {key: this.key, expanded: this.expanded, folds: this.folds,
                                              measure: this.measure});
    const text = writer.write();
    this.shades = writer.shades;  // the legend lists the shades drawn
    return text;
  }

  // -- drawing ----------------------------------------------------------------------------------
  mark(svg) {  // a node that differs from the other pane's model, and a closed block that holds one
    const paths = Object.keys(this.marks);  // places: paths without layer indices, as diff names them
    for (const g of svg.querySelectorAll("g.node[data-place], g.cluster[data-place]")) {
      const k = g.dataset.place, kind = this.marks[k];
      if (kind) g.classList.add(`diff-${kind}`);
      else if (g.classList.contains("block") && paths.some(p => p.startsWith(k + "."))) g.classList.add("diff-inside");
    }
  }

  draw(anchor) {
    const boxes = this.drawn();
    if (boxes > MAX_BOXES) {  // only a graph too large at its top level, with every block closed
      const note = document.createElement("p");
      note.className = "note too-large";
      note.textContent = `${this.model.name} draws ${boxes.toLocaleString("en-US")} boxes with every block closed; ` +
        `a drawing holds at most ${MAX_BOXES.toLocaleString("en-US")}: the table of parameters lists every node`;
      this.view.replaceChildren(note);
      this.view.style.height = "auto";
      this.svg = null;
      this.legendFor();
      return;
    }
    const before = anchor && this.screenPosition(anchor), old = this.svg && d3.zoomTransform(this.svg);
    const svg = this.viz.renderSVGElement(this.dot());
    const width = parseFloat(svg.getAttribute("width")), height = parseFloat(svg.getAttribute("height"));
    this.size = {width, height};
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.removeAttribute("viewBox");
    svg.setAttribute("class", "explorer-svg");
    const graph = svg.querySelector("g.graph");
    const zoom = document.createElementNS("http://www.w3.org/2000/svg", "g");
    zoom.setAttribute("class", "zoom");
    svg.insertBefore(zoom, graph);
    zoom.appendChild(graph);
    svg.querySelectorAll("title").forEach(t => t.remove());  // the tooltip says more
    for (const g of svg.querySelectorAll("g.node, g.cluster")) {
      const fold = /-p(\d+)$/.exec(g.id);
      if (fold) {
        g.dataset.path = this.byId.get(Number(fold[1])).path;
        g.dataset.place = this.byId.get(Number(fold[1])).place;
        g.dataset.kind = "pattern";
        g.dataset.expanded = String(g.classList.contains("cluster"));
        g.classList.add("block");
        continue;
      }
      const match = /-n(\d+)$/.exec(g.id);
      if (!match) continue;
      const node = this.byId.get(Number(match[1]));
      g.dataset.path = node.path;
      g.dataset.place = node.place;
      g.dataset.kind = node.kind;
      if (node.kind === "block") {
        g.dataset.expanded = String(this.expanded.has(node.id));
        g.classList.add("block");
      }
    }
    if (this.marks) this.mark(svg);
    this.view.replaceChildren(svg);
    this.svg = svg;
    this.zoomGroup = zoom;
    this.events();
    this.legendFor();
    const k = this.fitScale();
    // as tall as the drawing at that size, up to most of the window: a taller one is scrolled
    const shown = Math.min(height * k + 16, Math.max(320, window.innerHeight * 0.9));
    this.view.style.height = `${Math.max(160, shown)}px`;
    this.behaviour = d3.zoom().scaleExtent([0.05, 6]).on("zoom", e => zoom.setAttribute("transform", e.transform))
      .filter(e => e.type === "wheel" ? e.ctrlKey || e.metaKey : !e.ctrlKey && !e.button);  // the wheel scrolls
    const selection = d3.select(svg).call(this.behaviour).on("dblclick.zoom", null);
    svg.addEventListener("wheel", e => this.scroll(e), {passive: false});
    const after = anchor && this.screenPosition(anchor, true);
    if (before && after && old) {  // the clicked block stays where it was
      selection.call(this.behaviour.transform,
        d3.zoomIdentity.translate(before.x - after.x * old.k, before.y - after.y * old.k).scale(old.k));
    } else {
      this.fit(k);
    }
  }

  fitScale() {
    // the drawing's width fits the view, at a size whose labels a person reads (a tall drawing is
    // scrolled, never shrunk to fit the height; a wide one is panned)
    const box = this.view.clientWidth || this.root.clientWidth || 800;
    return Math.max(MIN_LABEL_PX / SMALL_PT, Math.min(MAX_SCALE, box / (this.size.width + 16)));
  }

  scroll(e) {
    // the wheel scrolls the drawing as a page scrolls (ctrl + wheel zooms); at its end, the page scrolls on
    if (e.ctrlKey || e.metaKey || !this.svg) return;
    const t = this.transform, unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? this.view.clientHeight : 1;
    const within = (at, delta, size, room) => {  // a drawing that fits its view (in that direction) stays
      if (!delta || size + 16 <= room) return at;
      const to = at - delta * unit;
      return delta > 0 ? Math.min(at, Math.max(room - 8 - size, to)) : Math.max(at, Math.min(8, to));
    };
    const x = within(t.x, e.deltaX, this.size.width * t.k, this.view.clientWidth);
    const y = within(t.y, e.deltaY, this.size.height * t.k, this.view.clientHeight);
    if (Math.abs(x - t.x) < 0.5 && Math.abs(y - t.y) < 0.5) return;
    e.preventDefault();
    d3.select(this.svg).call(this.behaviour.transform, d3.zoomIdentity.translate(x, y).scale(t.k));
  }

  fit(k) {
    if (!this.svg) return;
    k = k || this.fitScale();
    const box = this.view.clientWidth;
    const x = Math.max(8, (box - this.size.width * k) / 2);
    d3.select(this.svg).call(this.behaviour.transform, d3.zoomIdentity.translate(x, 8).scale(k));
  }

  get transform() {
    return this.svg ? d3.zoomTransform(this.svg) : null;
  }

  screenPosition(id, unscaled) {
    // the top-left corner of a node's or cluster's shape, in the zoom group's coordinates (or the
    // view's when `unscaled` is false)
    const g = this.svg && this.svg.querySelector(`[id="${this.key}-n${id}"]`);
    if (!g) return null;
    const b = g.getBBox();
    const graph = this.zoomGroup.firstElementChild;
    const m = graph.transform.baseVal.consolidate();
    const x = b.x + (m ? m.matrix.e : 0), y = b.y + (m ? m.matrix.f : 0);
    if (unscaled) return {x, y};
    const t = this.transform;
    return {x: t.x + x * t.k, y: t.y + y * t.k};
  }

  events() {
    this.svg.addEventListener("click", e => {
      const g = e.target.closest("g.node[data-kind='block'], g.node[data-kind='pattern'], g.cluster");
      if (!g) return;
      const fold = /-p(\d+)$/.exec(g.id);
      if (fold) {  // a repeating schedule: one box <-> one period
        const first = Number(fold[1]);
        let note = "";
        if (this.folds.has(first)) this.folds.delete(first);
        else note = this.within(first, () => this.folds.set(first, "period"));
        if (note === null) return;
        this.status.textContent = note;
        this.tip.hidden = true;
        this.draw();
        return;
      }
      const id = Number(/-n(\d+)$/.exec(g.id)[1]);
      let note = "";
      if (this.expanded.has(id)) this.expanded.delete(id);
      else note = this.within(id, () => this.opened(this.byId.get(id).body, this.expanded.add(id)));
      if (note === null) return;
      this.status.textContent = note;
      this.tip.hidden = true;
      this.draw(id);
    });
    this.svg.addEventListener("mouseover", e => {
      const g = e.target.closest("g.node, g.cluster");
      const fold = g && /-p(\d+)$/.exec(g.id);
      if (fold) { this.showFold(this.byId.get(Number(fold[1])), e); return; }
      const match = g && /-n(\d+)$/.exec(g.id);
      if (!match) { this.tip.hidden = true; return; }
      this.showTip(this.byId.get(Number(match[1])), e);
    });
    this.svg.addEventListener("mousemove", e => {
      if (!this.tip.hidden) this.placeTip(e);
    });
    this.svg.addEventListener("mouseleave", () => { this.tip.hidden = true; });
  }

  showTip(node, event) {
    const rows = [["path", node.path]];
    if (node.kind === "op") {
      rows.push(["op", node.op]);
      const args = argText(node.args);
      if (args.length) rows.push(["arguments", args.join(", ")]);
      rows.push(["in", node.in.map(s => s || "—").join(", ") || "—"], ["out", node.out.map(s => s || "—").join(", ")]);
      for (const t of node.tensors) {
        rows.push([t.buffer ? "buffer" : "tensor", `${t.name} [${t.shape.join(", ")}] ${t.count.toLocaleString("en-US")}` +
          (t.buffer ? ` ${t.dtype}` : "") + (t.tied_to ? ` = ${t.tied_to}` : "")]);
      }
      rows.push(["params", `${node.params.toLocaleString("en-US")}` + (node.total !== node.params ?
        ` (${node.total.toLocaleString("en-US")} in all repetitions)` : "")]);
      rows.push(["category", node.category]);
    } else {
      rows.push(["block", `${node.block}${times(node)}`], ["out", node.out.map(s => s || "—").join(", ")],
                ["params", `${node.params.toLocaleString("en-US")} per repetition, ${node.total.toLocaleString("en-US")} in all`]);
    }
    rows.push(["FLOPs", `${flopsText(node.flops)} (forward, every repetition)`], ["output bytes", bytesText(node.bytes)]);
    this.tip.innerHTML = `<table>${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
    this.tip.hidden = false;
    this.placeTip(event);
  }

  showFold(first, event) {
    // a folded schedule: its layers, its kinds of layer and how many layers each, what a click draws
    const p = first.pattern, times = Math.floor(p.layers / p.period), rest = p.layers % p.period;
    const layers = `${p.layers} repetitions of ${p.block}` + (p.periodic ? `: a period of ${p.period} layers, ` +
      `${times} times${rest ? ` and ${rest} more` : ""}` : "");
    const click = p.periodic ? `click to draw one period (${p.segment}.${p.start}..${p.start + p.period - 1})`
      : `click to draw ${p.segment}.${p.start}, which stands for all ${p.layers}`;
    const rows = [["path", first.path], ["schedule", p.label], ["layers", layers], ["kinds", p.kinds], ["", click]];
    this.tip.innerHTML = `<table>${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join("")}</table>`;
    this.tip.hidden = false;
    this.placeTip(event);
  }

  placeTip(event) {
    const box = this.root.getBoundingClientRect();
    const x = event.clientX - box.left + 14, y = event.clientY - box.top + 14;
    this.tip.style.left = `${Math.min(x, box.width - this.tip.offsetWidth - 4)}px`;
    this.tip.style.top = `${y}px`;
  }

  legendFor() {
    let used = this.svg && this.shades;
    if (!used) {  // nothing drawn (a graph too large): every node's own shade
      used = new Map();
      visit(this.model.graph, node => { const s = shade(this.measure, this.model, node); used.set(s.label, s); });
    }
    let entries;
    if (this.measure === "category") {
      entries = Array.from(used.values()).sort((a, b) => a.label.localeCompare(b.label));
    } else {
      entries = REPORT.palette.bins.filter(b => used.has(b[1])).map(b => used.get(b[1]));
      for (const none of ["no parameters", "none"]) if (used.has(none)) entries.push(used.get(none));
    }
    const m = MEASURES[this.measure];
    const total = this.measure === "category" ? "" : ` (of ${m.text(m.total(this.model))}${m.unit ? " " + m.unit : ""})`;
    this.legend.innerHTML = `<b>${esc(m.title)}${esc(total)}</b> ` + entries.map(s =>
      `<span class="entry"><span class="swatch"></span>${esc(s.label)}</span>`).join("") +
      `<span class="hint">click a block to open or close it; drag or wheel to move, ctrl + wheel to zoom</span>`;
    // colours set as properties: the page's Content-Security-Policy refuses style attributes
    this.legend.querySelectorAll(".swatch").forEach((swatch, i) => { swatch.style.background = entries[i].fill; });
  }

  // -- search -----------------------------------------------------------------------------------
  find(query) {
    const q = query.trim().toLowerCase();
    if (!q) return;
    const all = [];
    visit(this.model.graph, node => all.push(node));
    const match = all.find(n => n.path.toLowerCase() === q) || all.find(n => n.path.toLowerCase().endsWith("." + q))
      || all.find(n => n.path.toLowerCase().includes(q)) || all.find(n => n.name.toLowerCase().includes(q));
    if (!match) { this.status.textContent = `no node matches '${query}'`; return; }
    const note = this.within(match.id, () => {
      for (let p = this.parent.get(match.id); p; p = this.parent.get(p.id)) this.expanded.add(p.id);
      for (let n = match; n; n = this.parent.get(n.id)) {  // a run of a repeating schedule: draw it
        const first = this.patternOf.get(n.id);
        if (first) this.folds.set(first.id, first.pattern.drawn.includes(n.name) && this.folds.get(first.id) !== "all"
          ? "period" : "all");
      }
    });
    if (note === null) return;
    this.draw();
    this.status.textContent = `found ${match.path}` + (note ? ` (${note})` : "");
    const g = this.svg.querySelector(`[id="${this.key}-n${match.id}"]`);
    g.classList.add("found");
    const at = this.screenPosition(match.id, true), b = g.getBBox(), t = this.transform;
    const x = this.view.clientWidth / 2 - (at.x + b.width / 2) * t.k, y = this.view.clientHeight / 2 - (at.y + b.height / 2) * t.k;
    d3.select(this.svg).call(this.behaviour.transform, d3.zoomIdentity.translate(x, y).scale(t.k));
  }
}

window.archgraphExplorers = [];
Viz.instance().then(viz => {
  document.querySelectorAll(".explorer[data-model]").forEach((root, i) => {
    const model = REPORT.models[Number(root.dataset.model)];
    window.archgraphExplorers.push(new Explorer(root, model, viz, `x${i}`));
  });
  const pair = document.querySelector(".side-by-side");
  if (pair) {
    const panes = Array.from(pair.querySelectorAll(".pane"));
    const diffs = REPORT.diffs || {}, marked = Object.keys(diffs).length > 0;
    panes.forEach((pane, i) => {
      const select = pane.querySelector("select"), root = pane.querySelector(".explorer-pane");
      pane.show = () => {  // marks when the two panes show the models a diff compared, in its order
        const marks = diffs[panes.map(p => p.querySelector("select").value).join("-")];
        root.explorer = new Explorer(root, REPORT.models[Number(select.value)], viz, `p${i}`, marks && marks[i]);
      };
      // the marks hold for the pair of models the diff compared: a new pick redraws both panes
      select.addEventListener("change", marked ? () => panes.forEach(p => p.show()) : pane.show);
    });
    panes.forEach(pane => pane.show());
  }
  document.body.dataset.ready = "true";
});
