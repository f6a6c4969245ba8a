// Sortable, collapsible tables of the archgraph report.  A row with data-parent
// belongs under the row whose data-id it names: sorting orders siblings and keeps
// children under their block; collapsing a block hides everything beneath it.
"use strict";

function rowsOf(table) { return Array.from(table.tBodies[0].rows); }

function refresh(table) {
  const byId = new Map(rowsOf(table).map(r => [r.dataset.id, r]));
  for (const row of rowsOf(table)) {
    let parent = byId.get(row.dataset.parent), hidden = false;
    while (parent) {
      if (parent.classList.contains("collapsed")) { hidden = true; break; }
      parent = byId.get(parent.dataset.parent);
    }
    row.classList.toggle("hidden", hidden);
  }
}

function sortBy(table, index, numeric, descending) {
  const rows = rowsOf(table);
  const children = new Map();
  rows.forEach((row, order) => {
    row.dataset.order = row.dataset.order || String(order);
    const parent = row.dataset.parent || "";
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(row);
  });
  const key = row => {
    const value = row.cells[index].dataset.value || "";
    return numeric ? parseFloat(value) || 0 : value.toLowerCase();
  };
  const compare = (a, b) => {
    const x = key(a), y = key(b);
    const c = x < y ? -1 : x > y ? 1 : Number(a.dataset.order) - Number(b.dataset.order);
    return descending ? -c : c;
  };
  const ordered = [];
  const visit = parent => {
    for (const row of (children.get(parent) || []).sort(compare)) {
      ordered.push(row);
      if (row.dataset.id) visit(row.dataset.id);
    }
  };
  visit("");
  const body = table.tBodies[0];
  for (const row of ordered) body.appendChild(row);
}

function setCollapsed(row, collapsed) {
  row.classList.toggle("collapsed", collapsed);
  const button = row.querySelector("button.toggle");
  if (button) {
    button.textContent = collapsed ? "▸" : "▾";
    button.setAttribute("aria-expanded", String(!collapsed));
  }
}

for (const table of document.querySelectorAll("table.params, table.plans")) {   // plans: plan --search
  table.querySelectorAll("th").forEach((th, index) => {
    th.addEventListener("click", () => {
      const numeric = th.dataset.kind === "number", current = th.getAttribute("aria-sort");
      const descending = current ? current === "ascending" : numeric;  // numbers: largest first
      table.querySelectorAll("th").forEach(other => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      sortBy(table, index, numeric, descending);
    });
  });
  table.addEventListener("click", event => {
    const button = event.target.closest("button.toggle");
    if (!button) return;
    const row = button.closest("tr");
    setCollapsed(row, !row.classList.contains("collapsed"));
    refresh(table);
  });
}

for (const section of document.querySelectorAll("section.model")) {
  const table = section.querySelector("table.params");
  section.querySelectorAll(".tools button").forEach(button => {
    button.addEventListener("click", () => {
      const collapse = button.dataset.action === "collapse";
      table.querySelectorAll("tr.block").forEach(row => setCollapsed(row, collapse));
      refresh(table);
    });
  });
}
