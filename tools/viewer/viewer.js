// dagrad's graph viewer (engine/view/viewer_html.h): draws the view model
// (engine/view/view_model.h) in the page's #dagrad-model element, laid out
// by elkjs, with collapsible name scopes, details, search, forward <->
// gradient pairing, the arena's buffers and per-node times. window.dagradViewer
// exposes the state for the browser test (tools/viewer/browser_test.js).
'use strict';
(function () {
  const t0 = performance.now();
  const model = JSON.parse(document.getElementById('dagrad-model').textContent);
  const SVG = 'http://www.w3.org/2000/svg';
  const nodes = model.nodes;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const outputs = new Map(nodes.map((n) => [n.id, []]));
  const gradients = new Map();  // forward id -> its gradient nodes' ids
  for (const n of nodes) {
    for (const i of n.inputs) if (outputs.has(i)) outputs.get(i).push(n.id);
    if (n.gradient_of !== undefined) {
      if (!gradients.has(n.gradient_of)) gradients.set(n.gradient_of, []);
      gradients.get(n.gradient_of).push(n.id);
    }
  }

  // The scope tree: every scope path with its nodes, counts and times.
  const scopes = new Map();
  function scopeOf(path) {
    if (scopes.has(path)) return scopes.get(path);
    const cut = path.lastIndexOf('/');
    const s = { path, name: path.slice(cut + 1), parent: cut < 0 ? '' : path.slice(0, cut),
                children: [], count: 0, seconds: 0 };
    scopes.set(path, s);
    if (path !== '') scopeOf(s.parent).children.push(path);
    return s;
  }
  scopeOf('');
  for (const n of nodes) {
    for (let p = n.scope; ; p = scopeOf(p).parent) {
      const s = scopeOf(p);
      s.count += 1;
      s.seconds += n.seconds || 0;
      if (p === '') break;
    }
  }
  const numeric = (path) => /^\d+$/.test(scopes.get(path).name);
  // A scope folds its repeated blocks (children named 0..N) into one box.
  const folds = (path) => scopes.get(path).children.filter(numeric).length >= 2;
  const maxSeconds = Math.max(0, ...nodes.map((n) => n.seconds || 0));
  const state = { expanded: new Set(), unfolded: new Set(), selected: null, matches: new Set(),
                  layouts: 0, lastLayoutMs: 0 };

  // rep: what stands for node n on screen: n itself, the outermost
  // collapsed scope it is under, or the fold box of repeated blocks.
  function rep(n) {
    if (n.scope === '') return 'n' + n.id;
    const parts = n.scope.split('/');
    let path = '';
    for (const part of parts) {
      const parent = path;
      path = path === '' ? part : path + '/' + part;
      if (parent !== '' && numeric(path) && folds(parent) && !state.unfolded.has(parent)) {
        return 'f' + parent;
      }
      if (!state.expanded.has(path)) return 's' + path;
    }
    return 'n' + n.id;
  }

  function label(text, max) { return text.length > max ? text.slice(0, max - 1) + '\u2026' : text; }
  function fmtBytes(b) {
    if (b === undefined) return '?';
    const u = ['B', 'KiB', 'MiB', 'GiB'];
    let i = 0;
    while (b >= 1024 && i < 3) { b /= 1024; i += 1; }
    return (i === 0 ? b : b.toFixed(1)) + ' ' + u[i];
  }
  function fmtTime(s) { return s >= 1e-3 ? (s * 1e3).toFixed(2) + ' ms' : (s * 1e6).toFixed(1) + ' \u00b5s'; }
  function shapeText(n) { return '(' + n.shape.join(', ') + ')'; }
  function foldRange(path) {
    const kids = scopes.get(path).children.filter(numeric).map((c) => scopes.get(c).name);
    return kids[0] + '..' + kids[kids.length - 1];
  }

  // visibleGraph lists what is drawn: items with their containing expanded
  // scope, and the edges between them, each pair once.
  function visibleGraph() {
    const items = new Map();
    const repOf = new Map();
    for (const n of nodes) {
      const r = rep(n);
      repOf.set(n.id, r);
      if (!items.has(r)) items.set(r, { id: r, members: [], seconds: 0 });
      const item = items.get(r);
      item.members.push(n.id);
      item.seconds += n.seconds || 0;
    }
    for (const item of items.values()) {
      const k = item.id[0];
      const path = item.id.slice(1);
      if (k === 'n') item.parent = byId.get(+path).scope;
      else if (k === 's') item.parent = scopes.get(path).parent;
      else item.parent = path;
    }
    const edges = new Map();
    for (const n of nodes) {
      for (const i of n.inputs) {
        if (!repOf.has(i)) continue;
        const a = repOf.get(i);
        const b = repOf.get(n.id);
        if (a !== b) edges.set(a + '>' + b, { id: 'e' + edges.size, sources: [a], targets: [b] });
      }
    }
    return { items, edges: [...edges.values()], repOf };
  }

  function itemText(item) {
    const k = item.id[0];
    const path = item.id.slice(1);
    if (k === 'n') {
      const n = byId.get(+path);
      const what = n.op || n.kind;
      return [label(what, 28) + (n.name === what ? '' : ' ' + label(n.name, 24)), shapeText(n)];
    }
    if (k === 'f') {
      return [label(path + '/' + foldRange(path), 40),
              item.members.length + ' nodes, ' + scopes.get(path).children.filter(numeric).length + ' blocks'];
    }
    return [label(path, 40), item.members.length + ' nodes'];
  }

  function elkGraph(vis) {
    const containers = new Map();
    const root = { id: 'root', children: [], edges: vis.edges, layoutOptions: {
      'elk.algorithm': 'layered', 'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.layered.spacing.nodeNodeBetweenLayers': '28', 'elk.spacing.nodeNode': '14',
      'elk.padding': '[top=24,left=8,bottom=8,right=8]' } };
    function container(path) {
      if (path === '') return root;
      if (containers.has(path)) return containers.get(path);
      const c = { id: 'c' + path, children: [],
                  layoutOptions: { 'elk.padding': '[top=26,left=8,bottom=8,right=8]' } };
      containers.set(path, c);
      container(scopes.get(path).parent).children.push(c);
      return c;
    }
    for (const item of vis.items.values()) {
      const [a, b] = itemText(item);
      const width = Math.max(70, 6.4 * Math.max(a.length, b.length) + 16);
      container(item.parent).children.push({ id: item.id, width, height: 34 });
    }
    return { root, containers };
  }

  const graphSvg = document.createElementNS(SVG, 'svg');
  const viewport = document.createElementNS(SVG, 'g');
  graphSvg.appendChild(viewport);
  let vis = null;
  let itemEls = new Map();
  const placed = new Map();  // item or container id -> its box in graph coordinates

  function el(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  function itemClasses(item) {
    const k = item.id[0];
    if (k === 'f') return 'node fold';
    if (k === 's') return 'node box';
    const n = byId.get(+item.id.slice(1));
    if (n.loss) return 'node loss';
    return 'node ' + (n.kind === 'op' ? n.role : n.kind);
  }

  function drawItem(item, x, y, w, h, parent) {
    const g = el('g', { class: itemClasses(item), transform: `translate(${x},${y})`,
                        'data-item': item.id }, parent);
    placed.set(item.id, { x, y, w, h });
    el('rect', { width: w, height: h }, g);
    if (maxSeconds > 0 && item.seconds > 0) {
      el('rect', { class: 'shade', width: w, height: h,
                   'fill-opacity': (0.1 + 0.6 * Math.min(1, item.seconds / maxSeconds)).toFixed(3) }, g);
    }
    const [a, b] = itemText(item);
    el('text', { x: 6, y: 14 }, g).textContent = a;
    el('text', { x: 6, y: 28, class: 'sub' }, g).textContent =
      b + (item.seconds > 0 ? '  ' + fmtTime(item.seconds) : '');
    const title = el('title', {}, g);
    title.textContent = item.id[0] === 'n' ? byId.get(+item.id.slice(1)).scope + '/' + byId.get(+item.id.slice(1)).name
                                           : 'click to open ' + item.id.slice(1);
    itemEls.set(item.id, g);
  }

  function drawContainer(c, ox, oy, parent) {
    for (const child of c.children || []) {
      const x = ox + child.x;
      const y = oy + child.y;
      if (child.id[0] === 'c') {
        const path = child.id.slice(1);
        placed.set(child.id, { x, y, w: child.width, h: child.height });
        const g = el('g', { class: 'scope', 'data-scope': path }, parent);
        el('rect', { x, y, width: child.width, height: child.height }, g);
        const s = scopes.get(path);
        const text = el('text', { x: x + 6, y: y + 15, 'data-scope-label': path }, g);
        text.textContent = '\u25be ' + path + (s.seconds > 0 ? '  ' + fmtTime(s.seconds) : '');
        drawContainer(child, x, y, parent);
      } else {
        drawItem(vis.items.get(child.id), x, y, child.width, child.height, parent);
      }
    }
  }

  // drawEdges draws every edge; ELK gives an edge's points relative to
  // its container (e.container), else to the node that lists it.
  function drawEdges(laid, layer) {
    const walk = (c, ox, oy) => {
      for (const e of c.edges || []) {
        const box = e.container && e.container !== c.id ? placed.get(e.container) : null;
        const ex = box ? box.x : ox;
        const ey = box ? box.y : oy;
        for (const s of e.sections || []) {
          const pts = [s.startPoint, ...(s.bendPoints || []), s.endPoint];
          const d = pts.map((p, i) => (i ? 'L' : 'M') + (p.x + ex) + ',' + (p.y + ey)).join(' ');
          el('path', { class: 'edge', d, 'data-from': e.sources[0], 'data-to': e.targets[0],
                       'marker-end': 'url(#arrow)' }, layer);
        }
      }
      for (const child of c.children || []) {
        if (child.children) walk(child, ox + child.x, oy + child.y);
      }
    };
    walk(laid, 0, 0);
  }

  const elk = new ELK();
  let pending = Promise.resolve();
  let focus = null;  // the item or container to center after the next layout

  function relayout() {
    pending = pending.then(async () => {
      const started = performance.now();
      vis = visibleGraph();
      const { root } = elkGraph(vis);
      const laid = await elk.layout(root);
      viewport.textContent = '';
      itemEls = new Map();
      placed.clear();
      placed.set('root', { x: 0, y: 0, w: laid.width, h: laid.height });
      const defs = el('defs', {}, viewport);
      const marker = el('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4,
                                    markerWidth: 6, markerHeight: 6, orient: 'auto' }, defs);
      el('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#868e96' }, marker);
      const scopeLayer = el('g', {}, viewport);
      drawContainer(laid, 0, 0, scopeLayer);
      drawEdges(laid, el('g', {}, viewport));
      for (const g of itemEls.values()) viewport.appendChild(g);
      if (!view.w) fitView(laid.width, laid.height);
      if (focus && placed.has(focus)) centerOn(placed.get(focus));
      focus = null;
      applyView();
      restyle();
      state.layouts += 1;
      state.lastLayoutMs = performance.now() - started;
      document.body.dataset.layouts = String(state.layouts);
    });
    return pending;
  }

  // Pan and zoom by the viewBox.
  const view = { x: 0, y: 0, w: 0, h: 0 };
  function fitView(w, h) {
    const box = graphSvg.getBoundingClientRect();
    const scale = Math.max(w / Math.max(box.width, 1), h / Math.max(box.height, 1), 1);
    Object.assign(view, { x: -10, y: -10, w: box.width * scale + 20, h: box.height * scale + 20 });
  }
  function centerOn(box) {
    view.x = box.x + Math.min(box.w, view.w) / 2 - view.w / 2;
    view.y = box.y + Math.min(box.h, view.h) / 2 - view.h / 2;
  }
  function applyView() { graphSvg.setAttribute('viewBox', `${view.x} ${view.y} ${view.w} ${view.h}`); }
  graphSvg.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    const box = graphSvg.getBoundingClientRect();
    const px = view.x + view.w * (ev.clientX - box.left) / box.width;
    const py = view.y + view.h * (ev.clientY - box.top) / box.height;
    Object.assign(view, { x: px - (px - view.x) * f, y: py - (py - view.y) * f, w: view.w * f, h: view.h * f });
    applyView();
  }, { passive: false });
  let drag = null;
  graphSvg.addEventListener('mousedown', (ev) => { drag = { x: ev.clientX, y: ev.clientY, moved: false }; });
  window.addEventListener('mousemove', (ev) => {
    if (!drag) return;
    const box = graphSvg.getBoundingClientRect();
    const dx = (ev.clientX - drag.x) * view.w / box.width;
    const dy = (ev.clientY - drag.y) * view.h / box.height;
    if (Math.abs(dx) + Math.abs(dy) > 0) drag.moved = true;
    view.x -= dx; view.y -= dy;
    drag.x = ev.clientX; drag.y = ev.clientY;
    applyView();
  });
  window.addEventListener('mouseup', () => { setTimeout(() => { drag = null; }, 0); });

  // paired: the nodes autodiff pairs with node n (its gradient nodes, or
  // the forward node a gradient node came from and that one's others).
  function paired(n) {
    if (n.gradient_of !== undefined) return [n.gradient_of, ...(gradients.get(n.gradient_of) || [])];
    return gradients.get(n.id) || [];
  }

  function restyle() {
    for (const g of itemEls.values()) g.classList.remove('selected', 'paired', 'match');
    const mark = (id, cls) => {
      const g = itemEls.get(vis.repOf.get(id));
      if (g) g.classList.add(cls);
    };
    for (const id of state.matches) mark(id, 'match');
    const sel = state.selected === null ? null : byId.get(state.selected);
    if (sel) {
      for (const id of paired(sel)) if (id !== sel.id) mark(id, 'paired');
      mark(sel.id, 'selected');
    }
    for (const p of viewport.querySelectorAll('path.edge')) {
      const hot = sel && (p.dataset.from === vis.repOf.get(sel.id) || p.dataset.to === vis.repOf.get(sel.id));
      p.classList.toggle('hot', Boolean(hot));
    }
    drawMemory();
  }

  // Details of a node or a scope in the side panel.
  const side = document.createElement('div');
  side.id = 'side';
  const details = document.createElement('div');
  function link(id) {
    const n = byId.get(id);
    return n ? `<a data-select="${id}">${escapeHtml((n.scope ? n.scope + '/' : '') + n.name)}</a>` : String(id);
  }
  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  }
  function showNode(n, heading) {
    const rows = [['op', n.op || n.kind], ['role', n.role], ['dtype', n.dtype], ['shape', shapeText(n)],
                  ['bytes', fmtBytes(n.bytes)], ['scope', n.scope || '(top)'], ['id', n.id]];
    if (n.step !== undefined) rows.push(['step', n.step]);
    if (n.buffer !== undefined) {
      const b = model.buffers[n.buffer];
      rows.push(['buffer', `#${n.buffer}: ${fmtBytes(b.bytes)} at ${b.offset}, steps ${b.first}..${b.last}`]);
    }
    if (n.seconds !== undefined) rows.push(['time', fmtTime(n.seconds)]);
    const pairs = paired(n).filter((id) => id !== n.id);
    details.innerHTML = `<h2>${heading}: ${escapeHtml(n.name)}</h2><table>` +
      rows.map(([k, v]) => `<tr><td>${k}</td><td>${escapeHtml(v)}</td></tr>`).join('') +
      `<tr><td>inputs</td><td>${n.inputs.filter((i) => i >= 0).map(link).join('<br>') || '-'}</td></tr>` +
      `<tr><td>outputs</td><td>${outputs.get(n.id).map(link).join('<br>') || '-'}</td></tr>` +
      `<tr><td>${n.gradient_of !== undefined ? 'gradient of' : 'gradients'}</td><td class="pairs">` +
      `${pairs.map(link).join('<br>') || '-'}</td></tr></table>`;
  }
  function showScope(path) {
    const s = scopes.get(path);
    details.innerHTML = `<h2>scope ${escapeHtml(path)}</h2><table><tr><td>nodes</td><td>${s.count}</td></tr>` +
      (s.seconds > 0 ? `<tr><td>time</td><td>${fmtTime(s.seconds)}</td></tr>` : '') +
      `</table><p>click to open; open scopes close from their title</p>`;
  }

  function select(id) {
    state.selected = id;
    if (id !== null) showNode(byId.get(id), 'selected');
    restyle();
  }
  // reveal opens the scopes around node id so that it is drawn itself.
  function reveal(id) {
    const n = byId.get(id);
    let path = '';
    for (const part of n.scope ? n.scope.split('/') : []) {
      if (path !== '' && folds(path)) state.unfolded.add(path);
      path = path === '' ? part : path + '/' + part;
      state.expanded.add(path);
    }
    focus = 'n' + id;
    return relayout();
  }
  function expand(path) { state.expanded.add(path); focus = 'c' + path; return relayout(); }
  function collapse(path) {
    for (const p of [...state.expanded]) if (p === path || p.startsWith(path + '/')) state.expanded.delete(p);
    state.unfolded.delete(path);
    focus = 's' + path;
    return relayout();
  }
  function unfold(path) { state.unfolded.add(path); focus = 'c' + path; return relayout(); }

  graphSvg.addEventListener('click', (ev) => {
    if (drag && drag.moved) return;
    const scopeLabel = ev.target.closest('[data-scope-label]');
    if (scopeLabel) { collapse(scopeLabel.dataset.scopeLabel); return; }
    const g = ev.target.closest('[data-item]');
    if (!g) return;
    const id = g.dataset.item;
    if (id[0] === 's') expand(id.slice(1));
    else if (id[0] === 'f') unfold(id.slice(1));
    else select(+id.slice(1));
  });
  graphSvg.addEventListener('mouseover', (ev) => {
    const g = ev.target.closest('[data-item]');
    if (!g) return;
    const id = g.dataset.item;
    if (id[0] === 'n') showNode(byId.get(+id.slice(1)), 'hover');
    else showScope(id.slice(1));
  });
  side.addEventListener('click', (ev) => {
    const a = ev.target.closest('[data-select]');
    if (a) reveal(+a.dataset.select).then(() => select(+a.dataset.select));
  });

  // Search by name, op or scope.
  const bar = document.createElement('div');
  bar.id = 'bar';
  const total = nodes.reduce((s, n) => s + (n.seconds || 0), 0);
  bar.innerHTML = `<h1>${escapeHtml(model.title || 'dagrad graph')}</h1><span class="stats">${nodes.length} nodes` +
    (model.arena_bytes !== undefined ? `, arena peak ${fmtBytes(model.arena_bytes)}` : '') +
    (total > 0 ? `, ${fmtTime(total)} per run (${model.profile_runs} runs)` : '') +
    '</span><input id="search" type="search" placeholder="search name, op or scope">' +
    '<span id="count"></span>';
  const results = document.createElement('div');
  results.id = 'results';
  function search(q) {
    q = q.trim().toLowerCase();
    state.matches = new Set(q === '' ? [] : nodes.filter((n) =>
      n.name.toLowerCase().includes(q) || (n.op || n.kind).toLowerCase().includes(q) ||
      n.scope.toLowerCase().includes(q)).map((n) => n.id));
    bar.querySelector('#count').textContent = q === '' ? '' : state.matches.size + ' found';
    results.innerHTML = [...state.matches].slice(0, 100).map((id) => `<div>${link(id)}</div>`).join('');
    restyle();
  }
  bar.querySelector('#search').addEventListener('input', (ev) => search(ev.target.value));

  // Memory: each arena buffer over the schedule (x: steps, y: offset).
  const memory = document.createElement('div');
  memory.id = 'memory';
  const memSvg = document.createElementNS(SVG, 'svg');
  memory.appendChild(memSvg);
  function drawMemory() {
    memSvg.textContent = '';
    if (!model.buffers || !model.steps) {
      el('text', { x: 10, y: 20, class: 'axis' }, memSvg).textContent = 'no plan: memory not shown';
      return;
    }
    const W = 1000;
    const H = 150;
    memSvg.setAttribute('viewBox', `0 0 ${W} ${H}`);
    memSvg.setAttribute('preserveAspectRatio', 'none');
    const peak = Math.max(model.arena_bytes, 1);
    const sx = (W - 10) / model.steps;
    const sy = (H - 20) / peak;
    const selBuffer = state.selected === null ? undefined : byId.get(state.selected).buffer;
    model.buffers.forEach((b, i) => {
      const first = Math.max(b.first, 0);
      const r = el('rect', { class: 'buffer' + (i === selBuffer ? ' selected' : ''), x: 5 + first * sx,
                             y: 5 + b.offset * sy, width: Math.max((b.last - first + 1) * sx, 1),
                             height: Math.max(b.bytes * sy, 0.5), 'data-buffer': i }, memSvg);
      el('title', {}, r).textContent = `buffer #${i}: ${fmtBytes(b.bytes)}, steps ${b.first}..${b.last}`;
    });
    el('line', { class: 'peak', x1: 5, x2: W - 5, y1: 5 + peak * sy, y2: 5 + peak * sy }, memSvg);
    el('text', { x: 8, y: H - 3, class: 'axis' }, memSvg).textContent =
      `arena: ${model.buffers.length} buffers over ${model.steps} steps, peak ${fmtBytes(model.arena_bytes)}` +
      ` (without reuse ${fmtBytes(model.intermediate_bytes)})`;
  }
  memSvg.addEventListener('click', (ev) => {
    const r = ev.target.closest('[data-buffer]');
    if (!r) return;
    const b = model.buffers[+r.dataset.buffer];
    const id = b.nodes.find((x) => byId.get(x).step !== undefined) ?? b.nodes[0];
    reveal(id).then(() => select(id));
  });

  const graph = document.createElement('div');
  graph.id = 'graph';
  graph.appendChild(graphSvg);
  document.body.append(bar, graph, side, memory);
  side.append(results, details);
  details.innerHTML = '<p>Hover or click a node. Click a collapsed scope to open it.</p>';

  // fit shows the whole graph.
  function fit() {
    const all = placed.get('root');
    view.w = 0;
    fitView(all.w, all.h);
    applyView();
  }

  window.dagradViewer = { state, scopes, expand, collapse, unfold, select, search, reveal, fit,
                          visible: () => [...vis.items.keys()],
                          highlighted: () => [...viewport.querySelectorAll('.paired')].map((g) => g.dataset.item) };
  relayout().then(() => {
    window.dagradViewer.interactiveMs = performance.now() - t0;
    document.body.dataset.ready = '1';
  }).catch((e) => {
    // Said on the page too: ELK's layered layout overflows the browser's
    // stack on thousands of nodes side by side (no scopes to fold them).
    console.error('dagrad viewer: layout failed: ' + e);
    details.innerHTML = `<h2>The layout failed</h2><p>${escapeHtml(String(e))}</p><p>A graph ` +
      'of thousands of ops outside any name scope is too wide to lay out whole: draw it ' +
      'with <code>dagrad dot</code> (Graphviz), or build it under name scopes.</p>';
    document.body.dataset.ready = 'failed';
  });
}());
