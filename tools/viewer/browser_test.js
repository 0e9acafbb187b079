// The viewer in a real browser (ctest viewer_browser): Debian's chromium,
// driven by puppeteer-core (both from `bash tools/setup.sh --browser`).
//
//   node tools/viewer/browser_test.js DAGRAD_BINARY WORK_DIR [SCREENSHOT.png]
//
// It trains the default `dagrad train` run and a 12-layer GPT (one profiled
// step each) and opens their graph.html headless: no console errors; a
// scope expands and collapses by clicks; a search finds nodes; clicking a
// forward node highlights the gradient nodes autodiff made for it, and
// clicking one of those highlights the forward node; a screenshot is taken
// (tools/viewer/screenshot.png, the README's picture, is one). A chain of
// 10000 ops outside any scope (an ONNX file written here), which ELK cannot
// lay out, says so on the page instead of leaving it blank. It prints
// each page's open-to-interactive time (not asserted: the machine's load
// decides it). Exit 77 (ctest's skip) when no browser is installed.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const SKIP = 77;
const [dagrad, work, screenshot] = process.argv.slice(2);
if (!dagrad || !work) {
  console.error('usage: browser_test.js DAGRAD_BINARY WORK_DIR [SCREENSHOT.png]');
  process.exit(2);
}

function findBrowser() {
  for (const p of [process.env.DAGRAD_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (p && fs.existsSync(p)) return p;
  }
  return null;
}
let puppeteer;
try {
  puppeteer = require('puppeteer-core');
} catch (e) {
  console.log('SKIP: puppeteer-core is not installed (bash tools/setup.sh --browser)');
  process.exit(SKIP);
}
const browserPath = findBrowser();
if (!browserPath) {
  console.log('SKIP: no chromium (bash tools/setup.sh --browser installs Debian\'s)');
  process.exit(SKIP);
}

function check(ok, what) {
  if (!ok) throw new Error('failed: ' + what);
  console.log('ok: ' + what);
}

// train writes a run's outputs with one profiled step; returns graph.html.
function train(name, args) {
  const out = path.join(work, name);
  fs.rmSync(out, { recursive: true, force: true });
  execFileSync(dagrad, ['train', `--out=${out}`, '--steps=1', '--profile', ...args],
               { stdio: ['ignore', 'ignore', 'inherit'] });
  const html = path.join(out, 'graph.html');
  check(fs.existsSync(html), `${name}: dagrad train wrote graph.html`);
  return html;
}

async function open(browser, file) {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 720 });
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  const started = Date.now();
  await page.goto('file://' + file);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
  return { page, errors, ms: Date.now() - started };
}

async function layouts(page) { return page.evaluate(() => window.dagradViewer.state.layouts); }
async function afterLayout(page, before) {
  await page.waitForFunction((n) => window.dagradViewer.state.layouts > n, { timeout: 60000 }, before);
}

async function clickItem(page, item) {
  const before = await layouts(page);
  await page.click(`[data-item="${item}"]`);
  return before;
}

async function drive(page) {
  // Expand the first collapsed top-level scope with forward nodes, by a click.
  const scope = await page.evaluate(() => {
    const boxes = window.dagradViewer.visible().filter((i) => i[0] === 's');
    return boxes.find((b) => b !== 'sgrad' && b !== 'soptimizer').slice(1);
  });
  let before = await clickItem(page, 's' + scope);
  await afterLayout(page, before);
  check(await page.$(`[data-scope="${scope}"]`) !== null &&
        await page.$(`[data-item="s${scope}"]`) === null, `scope ${scope} expands on a click`);
  before = await layouts(page);
  await page.click(`[data-scope-label="${scope}"]`);
  await afterLayout(page, before);
  check(await page.$(`[data-item="s${scope}"]`) !== null, `scope ${scope} collapses on a click`);

  await page.type('#search', 'matmul');
  const found = await page.$eval('#count', (e) => e.textContent);
  check(/^[1-9]\d* found$/.test(found) && await page.$('.node.match') !== null,
        `search "matmul": ${found}, the boxes holding them marked`);

  // A forward product (linear, matmul) with gradient nodes: revealed, then clicked.
  const forward = await page.evaluate(() => {
    const model = JSON.parse(document.getElementById('dagrad-model').textContent);
    const made = new Set(model.nodes.filter((n) => n.gradient_of !== undefined).map((n) => n.gradient_of));
    return model.nodes.find((n) => ['linear', 'matmul'].includes(n.op) && n.role === 'forward' &&
                                   made.has(n.id)).id;
  });
  await page.evaluate((id) => window.dagradViewer.reveal(id), forward);
  await page.click(`[data-item="n${forward}"]`);
  const paired = await page.evaluate(() => window.dagradViewer.highlighted());
  const expected = await page.evaluate((id) => {
    const model = JSON.parse(document.getElementById('dagrad-model').textContent);
    return model.nodes.filter((n) => n.gradient_of === id).length;
  }, forward);
  check(paired.length > 0 && expected > 0 && await page.$(`.node.selected[data-item="n${forward}"]`) !== null,
        `clicking forward node ${forward} highlights ${paired.length} boxes holding its ${expected} gradient nodes`);
  const gradient = await page.evaluate((id) => {
    const model = JSON.parse(document.getElementById('dagrad-model').textContent);
    return model.nodes.find((n) => n.gradient_of === id).id;
  }, forward);
  await page.evaluate((id) => window.dagradViewer.reveal(id), gradient);
  await page.click(`[data-item="n${gradient}"]`);
  check(await page.$(`.node.paired[data-item="n${forward}"]`) !== null,
        `clicking gradient node ${gradient} highlights forward node ${forward}`);
  await page.evaluate((id) => window.dagradViewer.reveal(id).then(() => window.dagradViewer.select(id)), forward);
}

// FlatChainOnnx writes an ONNX model of n unnamed Tanh nodes in a line,
// float32 (4): protobuf by hand (field numbers of onnx.proto).
function flatChainOnnx(file, n) {
  const varint = (v) => {
    const out = [];
    for (; v > 127; v = Math.floor(v / 128)) out.push((v % 128) | 128);
    out.push(v);
    return Buffer.from(out);
  };
  const int = (field, v) => Buffer.concat([varint(field * 8), varint(v)]);
  const bytes = (field, b) => Buffer.concat([varint(field * 8 + 2), varint(b.length), b]);
  const str = (field, s) => bytes(field, Buffer.from(s));
  const msg = (field, ...parts) => bytes(field, Buffer.concat(parts));
  const value = (field, name) =>  // ValueInfoProto: a float tensor of shape (4)
    msg(field, str(1, name), msg(2, msg(1, int(1, 1), msg(2, msg(1, int(1, 4))))));
  const nodes = [];
  for (let i = 0; i < n; ++i) nodes.push(msg(1, str(1, `t${i}`), str(2, `t${i + 1}`), str(4, 'Tanh')));
  const graph = msg(7, ...nodes, str(2, 'flat'), value(11, 't0'), value(12, `t${n}`));
  fs.writeFileSync(file, Buffer.concat([int(1, 8), graph, msg(8, int(2, 17))]));
}

// layoutFailure opens a viewer page of a 10000-op flat chain: ELK's layered
// layout overflows the stack on it, and the page must say so.
async function layoutFailure(browser) {
  const onnx = path.join(work, 'flat.onnx'), html = path.join(work, 'flat.html');
  flatChainOnnx(onnx, 10000);
  try {
    execFileSync(dagrad, ['dot', `--model=${onnx}`, '--html', `--out=${html}`],
                 { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    console.log(`skip: the flat chain's page (dagrad dot read no ONNX: ${String(e.stderr).trim()})`);
    return;
  }
  const page = await browser.newPage();
  await page.goto('file://' + html);
  await page.waitForSelector('body[data-ready="failed"]', { timeout: 120000 });
  const said = await page.evaluate(() => document.querySelector('h2').parentElement.innerText);
  check(said.includes('The layout failed') && said.includes('dagrad dot'),
        `a 10000-op flat chain's page says its layout failed: ${said.split('\n')[0]}`);
  await page.close();
}

(async () => {
  fs.mkdirSync(work, { recursive: true });
  const corpus = path.join(work, 'corpus.txt');
  fs.writeFileSync(corpus, 'the quick brown fox jumps over the lazy dog. '.repeat(400));
  const pages = [['default train run (reverse)', train('default', [])],
                 ['12-layer GPT training step', train('gpt12', ['--task=text', `--data=${corpus}`, '--layers=12',
                                                              '--seq_len=32', '--batch=4'])]];
  if (process.env.DAGRAD_VIEWER_48) {
    pages.push(['48-layer GPT training step', train('gpt48', ['--task=text', `--data=${corpus}`, '--layers=48',
                                                              '--seq_len=32', '--batch=4'])]);
  }
  const browser = await puppeteer.launch({ executablePath: browserPath, headless: true,
                                           args: ['--no-sandbox', '--allow-file-access-from-files'] });
  try {
    for (const [name, file] of pages) {
      const { page, errors, ms } = await open(browser, file);
      const nodes = await page.evaluate(() => JSON.parse(document.getElementById('dagrad-model').textContent).nodes.length);
      console.log(`${name}: ${nodes} nodes, ${(fs.statSync(file).size / 1048576).toFixed(1)} MiB, ` +
                  `open to interactive ${ms} ms`);
      await drive(page);
      check(errors.length === 0, `${name}: no console errors ${errors.join('; ')}`);
      if (name.startsWith('default')) {
        // The picture: a fresh page, a forward node selected, its gradients listed.
        const forward = await page.evaluate(() => window.dagradViewer.state.selected);
        await page.reload();
        await page.waitForSelector('body[data-ready="1"]');
        await page.evaluate((id) => window.dagradViewer.reveal(id).then(() => window.dagradViewer.select(id)),
                            forward);
        await page.screenshot({ path: screenshot || path.join(work, 'viewer.png') });
      }
      await page.close();
    }
    await layoutFailure(browser);
  } finally {
    await browser.close();
  }
})().catch((e) => { console.error(e.message || e); process.exit(1); });
