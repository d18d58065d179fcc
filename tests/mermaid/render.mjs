// Renders every ```mermaid block that `convo-doctor diagnose --format
// markdown` writes, in headless Chromium with the `mermaid` package, and
// fails on any parse or render error. Run by render.sh (which checks that
// node and chromium are there); see that file for the usage.
//
//   node render.mjs BIN CHROMIUM SCREENSHOT.png
//
// Reports rendered: every top-level fixture alone, the whole fixtures/
// store (the size bounds: 25 graphs, then a table), a 5,000-event
// conversation (collapsing) and a hostile conversation whose kind, source and
// file names carry Mermaid and Markdown injections and an API key: the key
// may not reach the report at all, the injections only inside code spans
// (shown as literal text), its HTML may hold no element or link they made
// and its SVG no link or script.
// Last, a report of three fixtures is laid out like a GitHub comment and
// screenshotted (the picture in docs/output.md).

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { marked } from 'marked';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const [bin, chromiumPath, screenshot] = process.argv.slice(2);
if (!bin || !chromiumPath || !screenshot) {
  console.error('usage: node render.mjs BIN CHROMIUM SCREENSHOT.png');
  process.exit(2);
}

let failures = 0;
const fail = (msg) => {
  failures += 1;
  console.error(`FAIL: ${msg}`);
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'convo-doctor-mermaid-'));
const cleanTree = path.join(repo, 'fixtures/clean-tree/a5050c9292d85c568ea70f078f0dddb5');
const baseState = JSON.parse(fs.readFileSync(path.join(cleanTree, 'base_state.json'), 'utf8'));
const eid = (n) => `e0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const name = (i, id) => `event-${String(i).padStart(5, '0')}-${id}.json`;
const message = (i, parent, source = 'user') => ({
  id: eid(i),
  timestamp: '2026-01-01T00:00:00',
  source,
  kind: 'MessageEvent',
  llm_message: { role: source === 'agent' ? 'assistant' : 'user', content: [{ type: 'text', text: `message ${i}` }] },
  ...(parent === undefined ? {} : { parent_id: parent }),
});

function conversation(root, folder, events, state = {}) {
  const dir = path.join(root, folder);
  fs.mkdirSync(path.join(dir, 'events'), { recursive: true });
  const id = `${folder.slice(0, 8)}-${folder.slice(8, 12)}-${folder.slice(12, 16)}-${folder.slice(16, 20)}-${folder.slice(20)}`;
  fs.writeFileSync(path.join(dir, 'base_state.json'), JSON.stringify({ ...baseState, id, leaf_event_id: null, ...state }));
  for (const [file, body] of events) {
    fs.writeFileSync(path.join(dir, 'events', file), typeof body === 'string' ? body : JSON.stringify(body));
  }
  return dir;
}

// 5,000 events on one branch, with a 40-event branch left at 2,500.
const big = [];
for (let i = 0; i < 5000; i++) {
  big.push([name(i, eid(i)), message(i, i === 0 ? undefined : eid(i === 4960 ? 2500 : i - 1), i % 2 ? 'agent' : 'user')]);
}
// the active branch: ... 2499 -> 2500 -> 4960 -> ... -> 4999; 2501..4959 abandoned
const bigDir = conversation(path.join(tmp, 'big'), 'b16b16b16b16b16b16b16b16b16b16b1', big);

// Injections in a kind, a source and file names, with the API key of the
// conversation's own LLM in them.
const KEY = 'sk-proj-Zq8vN3xT5mK2pL9wR4yB7cF1hJ6dG0sA';
const EVIL = `"]; click t0 href "javascript:alert(1)" %%{init: {'securityLevel':'loose'}}%% | \` <script>alert(1)</script> ${KEY}`;
const injected = [
  [name(0, eid(0)), message(0, undefined)],
  [name(1, eid(1)), message(1, eid(0), 'agent')],
  [name(2, eid(2)), { ...message(2, eid(1)), kind: EVIL, source: `<img src=x onerror=alert(1)> | ${KEY}` }],
  [`event-00003-"]; click t2 call alert(1) |<script>\`${KEY}.json`, '{"kind": "MessageEvent"}'],
];
const state = { agent: { ...baseState.agent, llm: { ...baseState.agent.llm, api_key: KEY } } };
const injDir = conversation(path.join(tmp, 'inj'), '1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a', injected, state);

function diagnose(...paths) {
  const r = spawnSync(bin, ['diagnose', '--format', 'markdown', '--allow-empty', ...paths], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (r.status !== 0 && r.status !== 1) {
    fail(`diagnose ${paths.join(' ')} exited ${r.status}: ${r.stderr}`);
  }
  return r.stdout;
}

const reports = [];
for (const entry of fs.readdirSync(path.join(repo, 'fixtures')).sort()) {
  const p = path.join(repo, 'fixtures', entry);
  if (entry === 'gen' || !fs.statSync(p).isDirectory()) continue;
  reports.push([`fixtures/${entry}`, diagnose(path.relative(process.cwd(), p))]);
}
reports.push(['fixtures (whole store)', diagnose(path.relative(process.cwd(), path.join(repo, 'fixtures')))]);
reports.push(['5,000 events', diagnose(bigDir)]);
reports.push(['injection', diagnose(injDir)]);

const blocksOf = (md) => [...md.matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

// Structure: one graph per drawn conversation; the injection never raw.
for (const [what, md] of reports) {
  const sections = md.split('\n').filter((l) => l.startsWith('## ') && l !== '## Summary' && l !== '## More conversations with findings');
  const blocks = blocksOf(md);
  if (blocks.length !== sections.length) fail(`${what}: ${sections.length} sections, ${blocks.length} graphs`);
  if (blocks.length > 25) fail(`${what}: ${blocks.length} graphs (the bound is 25)`);
  if (!md.includes('## Summary')) fail(`${what}: no summary`);
}
const inj = reports.find(([w]) => w === 'injection')[1];
// The key nowhere, not even inside a code span.
if (inj.includes(KEY)) fail('the injection report holds the API key');
// Outside code spans (where GFM shows every character as itself, escaped
// for HTML: file names and ids are printed in them) and in every graph,
// no injection raw. A code span is a run of N backticks, its text, and the
// next run of exactly N backticks (CommonMark 6.1).
const codeSpan = /(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g;
const outside = inj
  .split(/^```mermaid\n[\s\S]*?^```$/gm)
  .map((prose) => prose.replace(codeSpan, ''))
  .join('\n');
const graphs = blocksOf(inj).join('\n');
for (const bad of ['"]; click', '<script', '<img', '%%{init', '`]', '|<', '"javascript']) {
  if (outside.includes(bad)) fail(`the injection report holds ${JSON.stringify(bad)} raw outside code spans`);
  if (graphs.includes(bad)) fail(`an injection graph holds ${JSON.stringify(bad)} raw`);
}
// As GitHub would show it: no element, handler or link the injection made.
const injHtml = marked.parse(inj.replace(/^```mermaid\n[\s\S]*?^```$/gm, ''));
for (const bad of ['<script', '<img', 'onerror=', 'href="javascript']) {
  if (injHtml.toLowerCase().includes(bad)) fail(`the injection report, as HTML, holds ${JSON.stringify(bad)}`);
}
if (!/<code>[^<]*&lt;script&gt;/.test(injHtml)) fail('the injected file name is not shown whole in a code span');
if (!inj.includes('REDACTED:')) fail('the injection report redacts nothing: was the key seen?');
const bigMd = reports.find(([w]) => w === '5,000 events')[1];
const bigGraph = blocksOf(bigMd)[0] ?? '';
if (bigGraph.split('\n').length > 40) fail(`the 5,000-event graph has ${bigGraph.split('\n').length} lines`);
if (!/… |#8230;/.test(bigGraph)) fail('the 5,000-event graph collapses nothing');

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
});
let rendered = 0;
let page;
try {
  page = await browser.newPage({ viewport: { width: 1000, height: 800 }, deviceScaleFactor: 1 });
  // nothing leaves the machine: every request but our own page is refused
  await page.route('**/*', (route) => (route.request().url().startsWith('data:') ? route.continue() : route.abort()));
  await page.setContent('<!doctype html><html><body></body></html>');
  await page.addScriptTag({ path: path.join(here, 'node_modules/mermaid/dist/mermaid.min.js') });
  await page.evaluate(() => window.mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', theme: 'default' }));
  const render = (text, id) =>
    page.evaluate(
      async ([text, id]) => {
        try {
          await window.mermaid.parse(text);
          const { svg } = await window.mermaid.render(id, text);
          // what a browser would make of it: no link, script, handler or
          // foreign URL anywhere in the SVG's elements
          const box = document.createElement('div');
          box.innerHTML = svg;
          const bad = [];
          for (const el of box.querySelectorAll('*')) {
            const tag = el.localName.toLowerCase();
            if (tag === 'a' || tag === 'script' || tag === 'iframe' || tag === 'img') bad.push(`<${tag}>`);
            for (const a of el.attributes) {
              if (/^on/i.test(a.name) || /href$/i.test(a.name) || /javascript:/i.test(a.value)) bad.push(`${tag}[${a.name}]`);
            }
          }
          return { svg, bad };
        } catch (e) {
          return { error: String(e && e.message ? e.message : e) };
        }
      },
      [text, id],
    );
  // The checker itself: a broken graph must fail to render, a link must be seen.
  const broken = await render('flowchart TD\n  a["x"] --> b["y\n', 'selftest1');
  if (!broken.error) fail('self-test: a broken graph rendered without an error');
  const linked = await render('flowchart TD\n  a["x"] --> b\n  click a href "https://example.com"', 'selftest2');
  if (linked.error || linked.bad.length === 0) fail(`self-test: a click href was not seen (${linked.error ?? 'no link found'})`);
  const svgs = new Map();
  for (const [what, md] of reports) {
    const blocks = blocksOf(md);
    for (let i = 0; i < blocks.length; i++) {
      const r = await render(blocks[i], `g${rendered}`);
      rendered += 1;
      if (r.error) {
        fail(`${what}, graph ${i + 1}: ${r.error}\n${blocks[i]}`);
        continue;
      }
      if (r.bad.length > 0) fail(`${what}, graph ${i + 1}: the SVG holds ${r.bad.join(', ')}`);
      if (/Syntax error|Parse error/i.test(r.svg)) fail(`${what}, graph ${i + 1}: an error diagram`);
      svgs.set(blocks[i], r.svg);
    }
  }
  console.log(`mermaid ${JSON.parse(fs.readFileSync(path.join(here, 'node_modules/mermaid/package.json'))).version}: ${rendered} graphs from ${reports.length} reports rendered in Chromium`);

  // The picture: a report of three fixtures as GitHub would show it.
  const shown = diagnose(
    ...['false-root', 'abandoned-branch', 'dangling-parent'].map((f) => path.relative(process.cwd(), path.join(repo, 'fixtures', f))),
  );
  let html = marked.parse(shown);
  const shownBlocks = blocksOf(shown);
  let k = 0;
  html = html.replace(/<pre><code class="language-mermaid">[\s\S]*?<\/code><\/pre>/g, () => {
    const text = shownBlocks[k++];
    return `<div class="graph">${svgs.get(text) ?? ''}</div>`;
  });
  for (const text of shownBlocks) {
    if (!svgs.has(text)) {
      const r = await render(text, `s${k++}`);
      if (r.error) fail(`screenshot graph: ${r.error}`);
      else html = html.replace('<div class="graph"></div>', `<div class="graph">${r.svg}</div>`);
    }
  }
  const css = `
    body { font-family: -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
           font-size: 14px; line-height: 1.5; color: #1f2328; background: #fff; margin: 0; }
    main { max-width: 920px; margin: 24px auto; padding: 16px 24px; border: 1px solid #d1d9e0; border-radius: 6px; }
    h1 { font-size: 1.7em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin-top: 0; }
    h2 { font-size: 1.25em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; margin-top: 1.5em; word-break: break-all; }
    table { border-collapse: collapse; margin: 8px 0 16px; display: block; width: max-content; max-width: 100%; overflow: auto; }
    th, td { border: 1px solid #d1d9e0; padding: 4px 10px; vertical-align: top; }
    tr:nth-child(2n) { background: #f6f8fa; }
    td { max-width: 420px; word-break: break-word; font-size: 13px; }
    code { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3; padding: .1em .35em; border-radius: 4px; font-size: 85%; }
    .graph { display: flex; justify-content: center; background: #fff; border: 1px solid #d1d9e0; border-radius: 6px; padding: 12px; margin-bottom: 16px; }
    .graph svg { max-width: 100%; height: auto; }`;
  await page.setContent(`<!doctype html><html><head><meta charset="utf-8"><style>${css}</style></head><body><main>${html}</main></body></html>`);
  fs.mkdirSync(path.dirname(path.resolve(screenshot)), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot: ${screenshot}`);
} finally {
  await browser.close();
  if (!process.env.KEEP_TMP) fs.rmSync(tmp, { recursive: true, force: true });
  else console.log(`kept ${tmp}`);
}
if (failures > 0) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
