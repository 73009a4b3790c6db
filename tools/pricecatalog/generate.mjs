// generate.mjs writes Switchyard's built-in price catalog (internal/pricedata/prices.json) from
// the npm package @pydantic/genai-prices (MIT). It keeps only the providers Switchyard names
// (docs/pricing.md) and the price fields it bills, in a compact form that the Go package
// internal/pricedata reads and matches with the package's own rules.
//
// Usage (from the repository root; needs node >= 18 and npm):
//
//	tools/pricecatalog/generate.sh [version]
//
// which installs the package into a temporary directory and runs this script with
// GENAI_PRICES_DIR pointing at it. The output is deterministic for one package version and
// date (SOURCE_DATE, default today in UTC).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.GENAI_PRICES_DIR;
if (!dir) throw new Error('GENAI_PRICES_DIR is not set (run generate.sh)');
const out = process.argv[2];
if (!out) throw new Error('usage: node generate.mjs OUTPUT.json');
const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
const lib = await import(pathToFileURL(join(dir, pkg.module || 'dist/index.js')).href);
const providers = await lib.waitForUpdate();

// Switchyard's provider id for each kept genai-prices provider id.
const keep = { openai: 'openai', anthropic: 'anthropic', google: 'google', aws: 'bedrock', azure: 'azure' };
// Switchyard ids priced as another's models (Vertex AI serves Google's and Anthropic's models at
// the prices the google provider of genai-prices lists).
const aliases = { vertex: 'google' };

// The price fields Switchyard bills (USD per million tokens), and the per-call server tools.
const fields = { input_mtok: 'input', output_mtok: 'output', cache_read_mtok: 'cache_read',
  cache_write_mtok: 'cache_write', cache_write_1h_mtok: 'cache_write_1h' };

function isTiered(v) { return v && typeof v === 'object' && 'base' in v; }

// convert turns a genai-prices ModelPrice (per-field tiers) into {input, ..., tiers: [{
// above_input_tokens, input, ...}]}: one tier per distinct threshold, each field at the price of
// its own highest tier at or below that threshold (genai-prices prices every token of a request
// whose input tokens are above a tier's start at that tier).
function convert(mp) {
  const p = {};
  const starts = new Set();
  for (const [k, name] of Object.entries(fields)) {
    const v = mp[k];
    if (v === undefined) continue;
    if (isTiered(v)) { p[name] = v.base; for (const t of v.tiers) starts.add(t.start); } else p[name] = v;
  }
  if (typeof mp.web_searches_kcount === 'number') p.web_search = mp.web_searches_kcount / 1000;
  const tiers = [];
  for (const s of [...starts].sort((a, b) => a - b)) {
    const t = { above_input_tokens: s };
    for (const [k, name] of Object.entries(fields)) {
      const v = mp[k];
      if (!isTiered(v)) continue;
      let price = v.base;
      for (const x of v.tiers) if (x.start <= s) price = x.price;
      if (price !== p[name]) t[name] = price;
    }
    tiers.push(t);
  }
  if (tiers.length) p.tiers = tiers;
  return p;
}

// Go's regexp (RE2) has no lookahead: a pattern that is one leading negative lookahead,
// "^(?!X)", becomes {not: {regex: "^X"}}; any other pattern is kept (the Go side treats one it
// cannot compile as matching nothing, and a test checks that every built-in pattern compiles).
function portMatch(m) {
  if (Array.isArray(m)) return m.map(portMatch);
  if (!m || typeof m !== 'object') return m;
  const o = {};
  for (const [k, v] of Object.entries(m)) {
    if (k === 'regex') {
      const g = /^\^\(\?!(.*)\)$/.exec(v);
      if (g && !/\(\?[!=<]/.test(g[1])) return { not: { regex: '^' + g[1] } };
      o[k] = v;
    } else o[k] = portMatch(v);
  }
  return o;
}

const outProviders = [];
for (const prov of providers) {
  const id = keep[prov.id];
  if (!id) continue;
  const models = [];
  for (const m of prov.models) {
    const entry = { id: m.id, match: portMatch(m.match) };
    if (m.context_window) entry.context_window = m.context_window;
    if (Array.isArray(m.prices)) {
      // Dated price changes are kept (the lookup picks the one in force when the config loads);
      // time-of-day prices (off-peak discounts) are not: the unconstrained price stands.
      const base = m.prices.find((x) => !x.constraint);
      if (!base) continue;
      entry.price = convert(base.prices);
      const changes = m.prices.filter((x) => x.constraint && x.constraint.type === 'start_date')
        .map((x) => ({ from: x.constraint.start_date, price: convert(x.prices) }));
      if (changes.length) entry.changes = changes;
    } else {
      entry.price = convert(m.prices);
    }
    if (entry.price.input === undefined && entry.price.output === undefined) continue;
    models.push(entry);
  }
  const p = { id, models };
  const fb = (prov.fallback_model_providers || []).map((f) => keep[f]).filter(Boolean);
  if (fb.length) p.fallbacks = fb;
  outProviders.push(p);
}
outProviders.sort((a, b) => a.id.localeCompare(b.id));

const date = process.env.SOURCE_DATE || new Date().toISOString().slice(0, 10);
const doc = {
  source: { package: pkg.name, version: pkg.version, license: pkg.license, date,
    homepage: 'https://github.com/pydantic/genai-prices' },
  aliases,
  providers: outProviders,
};
// One provider per line block, one model per line: small diffs between versions.
let s = '{"source":' + JSON.stringify(doc.source) + ',\n"aliases":' + JSON.stringify(aliases) + ',\n"providers":[\n';
s += outProviders.map((p) => {
  const head = { id: p.id };
  if (p.fallbacks) head.fallbacks = p.fallbacks;
  const h = JSON.stringify(head).slice(0, -1);
  return h + ',"models":[\n' + p.models.map((m) => JSON.stringify(m)).join(',\n') + '\n]}';
}).join(',\n');
s += '\n]}\n';
writeFileSync(out, s);

// Test vectors (internal/pricedata/testdata/vectors.json): the model genai-prices itself finds
// for each kept model's id and for a few provider-style variants, so that the Go lookup is
// checked against the package's own matching.
const vout = process.argv[3];
if (vout) {
  const back = Object.fromEntries(Object.entries(keep).map(([k, v]) => [v, k]));
  const ids = (p) => {
    const v = new Set();
    for (const m of p.models) {
      v.add(m.id);
      v.add(m.id.toUpperCase());
      v.add(m.id + '-20250101');
      v.add(m.id + '@20250101');
    }
    return [...v];
  };
  const vectors = [];
  for (const p of outProviders) {
    for (const id of ids(p).concat(['global.anthropic.claude-sonnet-4-5-20250929-v1:0',
      'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'apac.amazon.nova-pro-v1:0',
      'claude-sonnet-4-5@20250929', 'gpt-4o-mini-2024-07-18', 'no-such-model'])) {
      const r = lib.calcPrice({ input_tokens: 1 }, id, { providerId: back[p.id] });
      vectors.push([p.id, id, r ? r.model.id : '']);
    }
  }
  writeFileSync(vout, '[\n' + vectors.map((v) => JSON.stringify(v)).join(',\n') + '\n]\n');
}
console.error(`wrote ${out}: ${outProviders.map((p) => `${p.id} ${p.models.length}`).join(', ')}`);
