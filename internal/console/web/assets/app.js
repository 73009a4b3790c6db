// Switchyard console (docs/console.md). Plain JavaScript, no dependencies: every page is built
// with DOM calls (never innerHTML from data) from the admin API, reached through
// /console/api/admin/... with the session cookie and the CSRF token of the page.
'use strict';
(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const main = document.getElementById('main');
  const announce = document.getElementById('announce');
  const REFRESH_MS = 3000;

  // ---- helpers ----
  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error && body.error.message) || ('HTTP ' + status));
      this.status = status;
      this.body = body || {};
    }
  }

  // api calls the admin API (path after /admin/v1/, or 'route' for the plan). body is an
  // object (sent as JSON) or a string (sent as it is: exact decimals).
  async function api(method, path, body) {
    const url = path === 'route' ? '/console/api/route' : '/console/api/admin/v1/' + path;
    const init = { method, credentials: 'same-origin', headers: { 'Accept': 'application/json' } };
    if (method !== 'GET') init.headers['X-Switchyard-Csrf'] = csrf;
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
    }
    const r = await fetch(url, init);
    if (r.status === 401) {
      location.assign('/console/login');
      throw new ApiError(401, null);
    }
    const text = await r.text();
    let j = null;
    if (text) { try { j = JSON.parse(text); } catch (e) { j = null; } }
    if (!r.ok) throw new ApiError(r.status, j);
    return j;
  }

  // h builds an element: h('td', {class: 'num'}, 'text', child...). Attributes named on*
  // are listeners; text is textContent; null and false are left out.
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = v;
      else if (k === 'value') e.value = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of kids.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }
  // put appends the children to el, leaving out null and false (Element.append would write "null").
  const put = (el, ...kids) => el.append(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  // swap replaces el's children with kids, put's way.
  const swap = (el, ...kids) => { el.replaceChildren(); put(el, ...kids); };
  const say = (msg) => { announce.textContent = msg; };
  const qs = () => new URLSearchParams(location.search);
  const fmtTime = (s) => { if (!s) return '—'; const d = new Date(s); return isNaN(d) ? s : d.toLocaleString(); };
  const fmtMS = (v) => (v === null || v === undefined) ? '—' : (v < 10 ? v.toFixed(1) : Math.round(v)) + ' ms';
  const fmtUSD = (v) => (v === null || v === undefined) ? '—' : (v < 0 ? '−$' : '$') + Math.abs(+v).toFixed(6).replace(/0{1,4}$/, '');
  const fmtNum = (v, d) => (v === null || v === undefined || isNaN(v)) ? '—' : (+v).toFixed(d === undefined ? 0 : d);
  const fmtVal = (v) => {
    if (v === null || v === undefined || v === '') return '—';
    if (Array.isArray(v)) return v.length ? v.join(', ') : '[] (none)';
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  };
  function errorBox(err) {
    const box = h('div', { class: 'msg error', role: 'alert' }, err.message);
    const cs = err.body && err.body.conflicts;
    if (Array.isArray(cs) && cs.length) {
      put(box, h('ul', {}, cs.map((c) => h('li', {},
        `${c.field}: ${c.new ? 'the new ' + c.layer : c.layer + ' ' + c.id}`,
        c.fixed_by ? ` (constrained by ${[].concat(c.fixed_by).join(', ')})` : ''))));
    }
    return box;
  }
  function table(cols, rows, caption) {
    return h('div', { class: 'scroll' }, h('table', {},
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, cols.map((c) => h('td', { class: c.num ? 'num' : null }, c.cell(r))))))));
  }
  // every timer of the page, cleared when the page changes
  function every(ms, fn) {
    let busy = false;
    return setInterval(async () => {
      if (busy || document.visibilityState === 'hidden') return;
      busy = true;
      try { await fn(); } catch (e) { /* shown by fn's next successful run */ } finally { busy = false; }
    }, ms);
  }
  // replace swaps node old for new, keeping the focus on the element of the same id.
  function replace(old, neu) {
    const id = document.activeElement && old.contains(document.activeElement) ? document.activeElement.id : '';
    old.replaceWith(neu);
    if (id) { const f = document.getElementById(id); if (f) f.focus(); }
    return neu;
  }

  // ---- Logs ----
  const FILTERS = [
    ['account_id', 'Account id'], ['key_id', 'Key id'], ['model', 'Model'], ['deployment', 'Deployment'],
    ['status', 'Status'], ['class', 'Class'], ['since', 'Since'], ['until', 'Until'],
  ];
  const CLASSES = ['none', 'invalid_request', 'authentication', 'permission', 'model_unavailable', 'context_overflow',
    'content_policy', 'request_too_large', 'insufficient_credit', 'rate_limited', 'upstream_rate_limited',
    'upstream_timeout', 'upstream_error', 'upstream_overloaded', 'gateway_error', 'cancelled'];
  const served = (r) => (r.attempts || []).find((a) => a.outcome === 'completed' || a.outcome === 'truncated');
  const cost = (r) => (r.attempts || []).reduce((s, a) => s + (a.cost_usd || 0), 0);
  const keyOf = (r) => r.key_id || r.key || '';

  // keyNames maps stored keys' ids to their names (the first 500 keys; a static key's id is
  // its name already); {} when the keys cannot be listed.
  async function keyNames() {
    try {
      const page = await api('GET', 'keys?limit=500');
      return Object.fromEntries((page.data || []).map((k) => [k.id, k.name]));
    } catch (e) { return {}; }
  }

  async function logsPage() {
    const q = qs();
    if (q.get('request')) return detailPage(q.get('request'));
    swap(main, h('h1', {}, 'Logs'));
    const form = h('form', { class: 'filters', method: 'get', action: '/console/logs', 'aria-label': 'Filters' },
      FILTERS.map(([name, label]) => h('label', { for: 'f-' + name }, label,
        h('input', {
          id: 'f-' + name, name, value: q.get(name) || '',
          type: name === 'since' || name === 'until' ? 'datetime-local' : 'text', placeholder: name === 'status' ? '429 or 5xx' : (name === 'class' ? 'none = success' : null),
          list: name === 'class' ? 'classes' : null,
        }))),
      h('datalist', { id: 'classes' }, CLASSES.map((c) => h('option', { value: c }))),
      h('button', { type: 'submit' }, 'Filter'),
      h('a', { href: '/console/logs' }, 'Clear'));
    // Search by request id, the gateway's (x-request-id of the answer) or the caller's own
    // (the x-request-id or X-Client-Request-Id it sent): one match opens its detail, several
    // (a caller that reused its id) are listed.
    const search = h('form', { class: 'filters', method: 'get', action: '/console/logs', role: 'search', id: 'find-request' },
      h('label', { for: 'f-request' }, 'Request id (ours or the caller\'s)', h('input', { id: 'f-request', name: 'request_id', value: q.get('request_id') || '', placeholder: 'req_… or the caller\'s id', required: true, maxlength: 512 })),
      h('button', { type: 'submit', class: 'secondary' }, 'Find'));
    const auto = h('input', { type: 'checkbox', id: 'autorefresh', checked: true });
    const state = h('span', { class: 'muted', id: 'logs-state' });
    put(main, search, form, h('p', { class: 'row' }, h('label', { for: 'autorefresh' }, auto, ' Refresh every 3 s'), state));
    const names = await keyNames();
    let list = h('div', { id: 'logs' });
    const more = h('button', { type: 'button', class: 'secondary', id: 'older', hidden: true }, 'Load older');
    put(main, list, more);

    const params = new URLSearchParams();
    for (const [name] of FILTERS) {
      let v = q.get(name);
      if (!v) continue;
      if ((name === 'since' || name === 'until') && !/Z|[+-]\d\d:\d\d$/.test(v)) {
        const d = new Date(v);
        if (!isNaN(d)) v = d.toISOString();
      }
      params.set(name, v);
    }
    if (q.get('request_id')) params.set('request_id', q.get('request_id'));
    params.set('limit', '50');
    let rows = [], cursor = null, last = '';
    const render = () => {
      list = replace(list, h('div', { id: 'logs' }, rows.length === 0 ? h('p', {}, 'No requests match.') : table([
        // Status and class first after the time: in a narrow window they stay on screen.
        { label: 'Time', cell: (r) => fmtTime(r.created_at) },
        { label: 'Status', num: true, cell: (r) => h('span', { class: r.status >= 400 ? 'bad' : 'ok' }, r.status) },
        { label: 'Class', cell: (r) => r.error_code || 'ok' },
        { label: 'Request', cell: (r) => h('a', { href: '/console/logs?request=' + encodeURIComponent(r.request_id), id: 'req-' + r.request_id, class: 'mono' }, r.request_id) },
        { label: 'Caller id', cell: (r) => r.caller_request_id ? h('span', { class: 'mono' }, r.caller_request_id) : '—' },
        { label: 'Key', cell: (r) => keyOf(r) ? h('span', { title: keyOf(r) }, names[keyOf(r)] || keyOf(r)) : '—' },
        { label: 'Account', cell: (r) => h('span', { class: 'mono' }, r.account || '—') },
        { label: 'Model', cell: (r) => r.model },
        { label: 'Attempts', num: true, cell: (r) => { const n = (r.attempts || []).length, f = (r.attempts || []).filter((a) => a.outcome === 'failed').length; return f ? `${n} (${f} failed)` : String(n); } },
        { label: 'Deployment', cell: (r) => { const a = served(r); return a ? a.deployment : '—'; } },
        { label: 'Tokens in / out', num: true, cell: (r) => { const a = served(r); return a ? `${a.tokens.input} / ${a.tokens.output}` : '—'; } },
        { label: 'Cost', num: true, cell: (r) => fmtUSD(cost(r)) },
        { label: 'Duration', num: true, cell: (r) => fmtMS(r.duration_ms) },
      ], rows, 'Requests, newest first')));
      more.hidden = !cursor;
    };
    const load = async () => {
      try {
        const page = await api('GET', 'requests?' + params);
        const sig = JSON.stringify(page.data);
        if (params.get('request_id') && !last && page.data.length === 1 && !page.next_cursor) {
          location.replace('/console/logs?request=' + encodeURIComponent(page.data[0].request_id)); // the one match
          return;
        }
        if (sig !== last) { last = sig; rows = page.data; cursor = page.next_cursor; render(); }
        state.textContent = 'Updated ' + new Date().toLocaleTimeString();
      } catch (e) { list = replace(list, h('div', { id: 'logs' }, errorBox(e))); }
    };
    more.addEventListener('click', async () => {
      auto.checked = false; // older pages stay put: refreshing would drop them
      const p = new URLSearchParams(params); p.set('cursor', cursor);
      try {
        const page = await api('GET', 'requests?' + p);
        rows = rows.concat(page.data); cursor = page.next_cursor; render();
        say(`${page.data.length} older requests loaded`);
      } catch (e) { put(main, errorBox(e)); }
    });
    await load();
    every(REFRESH_MS, () => auto.checked ? load() : null);
  }

  async function detailPage(id) {
    swap(main, h('p', {}, h('a', { href: '/console/logs' }, '← All requests')), h('h1', {}, 'Request ', h('span', { class: 'mono' }, id)));
    let r;
    try { r = await api('GET', 'requests/' + encodeURIComponent(id)); } catch (e) { put(main, errorBox(e)); return; }
    const a = served(r);
    const names = await keyNames();
    const reserved = (r.attempts || []).reduce((s, t) => s + (t.reserved_max_usd || 0), 0);
    put(main, h('dl', { class: 'kv', id: 'request-summary' },
      kv('Time', fmtTime(r.created_at)), kv('Caller request id', r.caller_request_id || '—'), kv('Model', r.model), kv('Surface', r.surface), kv('Account', r.account || '—'),
      kv('Key', keyOf(r) ? (names[keyOf(r)] ? `${names[keyOf(r)]} (${keyOf(r)})` : keyOf(r)) : '—'), kv('Status', String(r.status)), kv('Class', r.error_code || 'ok'), kv('Stream', r.stream ? 'yes' : 'no'),
      kv('Served by', a ? a.deployment : '—'), kv('Cost', fmtUSD(cost(r))), kv('Duration', fmtMS(r.duration_ms))));
    put(main, h('h2', {}, 'Attempts'), table([
      { label: 'Job ID / Attempt', cell: (t) => h('span', { class: 'job' }, h('span', { class: 'mono' }, r.request_id), ` / ${t.attempt}`) },
      { label: 'Deployment', cell: (t) => t.deployment },
      { label: 'Provider', cell: (t) => t.provider },
      { label: 'Upstream model', cell: (t) => t.upstream_model },
      { label: 'Outcome', cell: (t) => h('span', { class: t.outcome === 'completed' ? 'ok' : 'bad' }, t.outcome) },
      { label: 'Class', cell: (t) => t.error_code || '—' },
      { label: 'Origin', cell: (t) => t.error_origin || '—' },
      { label: 'Upstream status', num: true, cell: (t) => t.upstream_status ? String(t.upstream_status) : '—' },
      { label: 'Headers', num: true, cell: (t) => fmtMS(t.headers_ms) },
      { label: 'First token', num: true, cell: (t) => fmtMS(t.first_token_ms) },
      { label: 'Tokens in / out', num: true, cell: (t) => t.tokens ? `${t.tokens.input} / ${t.tokens.output}` : '—' },
      { label: 'Cost', num: true, cell: (t) => fmtUSD(t.cost_usd) },
      { label: 'Billing', cell: (t) => t.billing_source || '—' },
      { label: 'Dropped params', cell: (t) => (t.dropped_params || []).join(', ') || '—' },
    ], r.attempts || [], 'Attempts in dispatch order'));
    // The cost breakdown: what each attempt reserved before dispatch, the price it was billed
    // at (USD per million tokens, as it was then) and what it settled at.
    const perM = (p, k) => p && p[k] !== undefined ? '$' + (+p[k]).toString() : '—';
    put(main, h('h2', {}, 'Cost'), h('p', { id: 'cost-summary' }, `Reserved ${fmtUSD(reserved)}, settled ${fmtUSD(cost(r))}.`), table([
      { label: 'Attempt', num: true, cell: (t) => String(t.attempt) },
      { label: 'Deployment', cell: (t) => t.deployment },
      { label: 'Reserved', num: true, cell: (t) => fmtUSD(t.reserved_max_usd || 0) },
      { label: 'Price in / out per 1M', num: true, cell: (t) => t.price ? `${perM(t.price, 'input')} / ${perM(t.price, 'output')}` : 'unpriced' },
      { label: 'Tokens in (cached) / out', num: true, cell: (t) => t.tokens ? `${t.tokens.input + t.tokens.cached + t.tokens.cache_write} (${t.tokens.cached}) / ${t.tokens.output}` : '—' },
      { label: 'Settled', num: true, cell: (t) => fmtUSD(t.cost_usd) },
      { label: 'Billing', cell: (t) => t.billing_source || '—' },
    ], r.attempts || [], 'Cost of each attempt'));
    // The cost of each priced attempt, broken down: each token count x its price per million,
    // and each web search x its price per call (pricing.md).
    const priced = (r.attempts || []).filter((t) => t.price && (t.price.lines || []).length);
    if (priced.length) {
      put(main, h('h2', {}, 'Cost breakdown'), h('div', { id: 'cost-breakdown' }, priced.map((t) => h('div', {},
        h('p', {}, `Attempt ${t.attempt} (${t.deployment}): price from ${t.price.source || 'config'}`,
          t.price.tier_above_input_tokens ? `, long-context tier above ${t.price.tier_above_input_tokens} input tokens` : ', base prices'),
        table([
          { label: 'Tokens or calls', cell: (l) => l.kind.replace(/_/g, ' ') },
          { label: 'Count', num: true, cell: (l) => String(l.count) },
          { label: 'Price', num: true, cell: (l) => l.kind === 'web_search' ? `${fmtUSD(l.usd_per_call || 0)} per call` : `${fmtUSD(l.usd_per_mtok)} per Mtok` },
          { label: 'USD', num: true, cell: (l) => fmtUSD(l.usd) },
        ], t.price.lines, `Cost of attempt ${t.attempt}`)))));
    }
    const ev = r.admission_events || [];
    if (ev.length) {
      put(main, h('h2', {}, 'Admission events'), h('ol', { id: 'admission-events' }, ev.map((e) => h('li', {},
        h('strong', {}, e.kind), ' ', Object.entries(e).filter(([k]) => k !== 'kind').map(([k, v]) => `${k}=${fmtVal(v)}`).join(' ')))));
    }
    document.title = id + ' · Switchyard console';
  }
  const kv = (k, v) => [h('dt', {}, k), h('dd', {}, v)];

  // ---- Models ----
  async function modelsPage() {
    swap(main, h('h1', {}, 'Models'));
    const auto = h('input', { type: 'checkbox', id: 'autorefresh', checked: true });
    const state = h('span', { class: 'muted' });
    put(main, h('p', { class: 'row' }, h('label', { for: 'autorefresh' }, auto, ' Refresh every 3 s'), state,
      h('span', { class: 'muted' }, 'Uptime stays blank until a route has 100 counted requests (this replica, last 24 h).')));
    let box = h('div', { id: 'models' });
    const planBox = h('section', { 'aria-labelledby': 'plan-h' });
    put(main, box, planBox);
    const uptime = (v) => (v === null || v === undefined) ? '' : fmtNum(v * 100, 2) + '%';
    const pct = (o) => o ? `${fmtMS(o.p50)} / ${fmtMS(o.p99)}` : '—';
    const circuit = (d) => h('span', { class: 'pill ' + (d.circuit || ''), 'data-circuit': d.deployment },
      (d.circuit || '—') + (d.circuit_open_until ? ' until ' + fmtTime(d.circuit_open_until) : ''));
    const paused = (d) => d.paused_until ? h('span', { class: 'pill paused' }, 'until ' + fmtTime(d.paused_until)) : 'no';
    const disabled = (d) => d.disabled ? h('span', { class: 'pill disabled' }, d.override === true ? 'disabled (override)' : 'disabled') : 'no';
    const load = async () => {
      try {
        const [ms, ds] = await Promise.all([api('GET', 'stats/models'), api('GET', 'stats/deployments')]);
        const models = ms.data.map((m) => m.model);
        box = replace(box, h('div', { id: 'models' },
          h('h2', { id: 'deployments-h' }, 'Deployments'),
          table([
            { label: 'Deployment', cell: (d) => d.deployment },
            { label: 'Provider', cell: (d) => d.provider },
            { label: 'Counted requests', num: true, cell: (d) => fmtNum(d.requests) },
            { label: 'Uptime', num: true, cell: (d) => uptime(d.uptime) },
            { label: 'Circuit', cell: (d) => h('span', { class: 'pill ' + (d.deployment_circuit || '') }, (d.deployment_circuit || '—') + (d.circuit_open_until ? ' until ' + fmtTime(d.circuit_open_until) : '')) },
            { label: 'Provider paused', cell: paused },
            { label: 'Disabled', cell: disabled },
          ], ds.data, 'Deployments'),
          ms.data.map((m) => h('section', { 'aria-labelledby': 'm-' + m.model },
            h('h2', { id: 'm-' + m.model }, m.model),
            (m.deployments || []).length === 0 ? h('p', {}, 'No deployment serves it.') : table([
              { label: 'Deployment', cell: (d) => d.deployment },
              { label: 'Provider', cell: (d) => d.provider },
              { label: 'Upstream model', cell: (d) => d.upstream_model },
              { label: 'Counted requests', num: true, cell: (d) => fmtNum(d.requests) },
              { label: 'Uptime', num: true, cell: (d) => h('span', { 'data-uptime': d.deployment }, uptime(d.uptime)) },
              { label: 'TTFT p50 / p99', num: true, cell: (d) => pct(d.ttft_ms) },
              { label: 'Latency p50 / p99', num: true, cell: (d) => pct(d.latency_ms) },
              { label: 'Throughput', num: true, cell: (d) => d.throughput_tokens_per_s === null || d.throughput_tokens_per_s === undefined ? '—' : fmtNum(d.throughput_tokens_per_s, 1) + ' tok/s' },
              { label: 'Circuit', cell: circuit },
              { label: 'Paused', cell: paused },
              { label: 'Disabled', cell: disabled },
              { label: 'Price in / out per Mtok', num: true, cell: (d) => d.price ? `${fmtUSD(d.price.input)} / ${fmtUSD(d.price.output)}` : 'unpriced' },
            ], m.deployments, 'Deployments of ' + m.model)))));
        state.textContent = 'Updated ' + new Date().toLocaleTimeString();
        if (!planBox.firstChild) planForm(planBox, models);
      } catch (e) { box = replace(box, h('div', { id: 'models' }, errorBox(e))); }
    };
    await load();
    every(REFRESH_MS, () => auto.checked ? load() : null);
  }

  function planForm(box, models) {
    const out = h('div', { id: 'plan' });
    const form = h('form', { class: 'filters', 'aria-label': 'Sample request' },
      h('label', { for: 'p-model' }, 'Model', h('input', { id: 'p-model', list: 'model-ids', value: models[0] || '', required: true })),
      h('datalist', { id: 'model-ids' }, models.map((m) => h('option', { value: m }))),
      h('label', { for: 'p-surface' }, 'Surface', h('select', { id: 'p-surface' }, h('option', { value: 'openai' }, 'OpenAI'), h('option', { value: 'anthropic' }, 'Anthropic'))),
      h('label', { for: 'p-text' }, 'Message', h('input', { id: 'p-text', value: 'Hello' })),
      h('button', { type: 'submit' }, 'Explain the plan'));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const surface = form.querySelector('#p-surface').value;
      const body = { model: form.querySelector('#p-model').value, surface, messages: [{ role: 'user', content: form.querySelector('#p-text').value }] };
      if (surface === 'anthropic') body.max_tokens = 256;
      try {
        const p = await api('POST', 'route', body);
        swap(out,
          h('p', {}, `Strategy ${p.strategy}${p.degraded_from ? ' (degraded from ' + p.degraded_from + ')' : ''}; resolved model ${p.resolved_model}`,
            p.attempt_limit ? `; at most ${p.attempt_limit} attempts` : ''),
          p.refusal ? h('p', { class: 'msg error', role: 'alert' }, `Would be refused: ${p.refusal.status} ${p.refusal.error_type}: ${p.refusal.message}`) : null,
          table([
            { label: 'Order', num: true, cell: (c) => String(p.candidates.indexOf(c) + 1) },
            { label: 'Deployment', cell: (c) => c.deployment },
            { label: 'Provider', cell: (c) => c.provider },
            { label: 'Upstream model', cell: (c) => c.upstream_model },
            { label: 'Band', num: true, cell: (c) => String(c.band) },
            { label: 'Score', num: true, cell: (c) => c.score === null ? '—' : fmtNum(c.score, 3) },
          ], p.candidates, 'Candidates in the order they would be tried'),
          p.dropped.length ? h('div', {}, h('h3', {}, 'Dropped'), h('ul', {}, p.dropped.map((d) => h('li', {}, `${d.deployment} (${d.model}): ${d.reason}`)))) : null);
        say('Plan shown');
      } catch (e) { swap(out, errorBox(e)); }
    });
    put(box, h('h2', { id: 'plan-h' }, 'Plan for a sample request'), h('p', { class: 'muted' }, 'POST /v1/route on this gateway, as the operator: no provider is called.'), form, out);
  }

  // ---- Keys and settings ----
  const FIELDS = [
    { name: 'strategy', axis: 'pref', type: 'select', options: ['price', 'latency', 'throughput', 'reliability', 'balanced', 'priority'] },
    { name: 'preferred_providers', axis: 'pref', type: 'list' },
    { name: 'allow_request_override', axis: 'pref', type: 'bool' },
    { name: 'policy', axis: 'pref', type: 'text' },
    { name: 'billing', axis: 'pref', type: 'select', options: ['unmetered', 'prepaid'], only: 'account' },
    { name: 'models', axis: 'constraint', type: 'list' },
    { name: 'providers', axis: 'constraint', type: 'list' },
    { name: 'tier_scope', axis: 'constraint', type: 'select', options: ['all', 'official', 'value'] },
    { name: 'limits.rpm', axis: 'limit', type: 'int' },
    { name: 'limits.tpm', axis: 'limit', type: 'int' },
    { name: 'limits.concurrency', axis: 'limit', type: 'int' },
    { name: 'limits.budget_usd', axis: 'limit', type: 'decimal' },
    { name: 'limits.budget_period', axis: 'limit', type: 'select', options: ['day', 'month', 'total'] },
  ];
  const UPPER = { account: [], workspace: ['account'], key: ['account', 'workspace'] };
  const get = (o, path) => path.split('.').reduce((v, k) => (v === null || v === undefined) ? undefined : v[k], o);

  // settingsForm edits one layer's own settings. own: the layer's stored settings; effective:
  // the key's effective settings (null on the account); upperOwn: [[layer, settings]] of the
  // layers above, most general first. Every field states its layer rule (docs/layers.md), decided
  // by its axis: a preference always has a control (the most specific layer wins, so this layer
  // may override what is above); a constraint can only narrow, so a tier_scope an upper layer
  // fixed (official or value: nothing else is left to choose) is shown as its value, not a
  // control; the constraint lists keep an input to narrow further; limits all apply together.
  function settingsForm(layer, id, own, effective, upperOwn) {
    const idp = `s-${layer}-`;
    const msg = h('div', { id: `settings-msg-${layer}`, 'aria-live': 'polite' });
    const rows = [];
    const uppers = (upperOwn || []).filter(([ln]) => UPPER[layer].includes(ln));
    for (const f of FIELDS) {
      if (f.only && f.only !== layer) continue;
      const cur = get(own, f.name);
      const eff = effective ? effective[f.name.split('.')[0]] : undefined;
      // setAbove: the upper layers that set the field, with their values, most general first.
      const setAbove = uppers.map(([ln, st]) => [ln, get(st, f.name)]).filter(([, v]) => v !== undefined && v !== null && !(Array.isArray(v) && !v.length));
      let fixedAbove = '', fixedValue;
      if (f.name === 'tier_scope') {
        const by = eff ? [].concat(eff.fixed_by).filter((ln) => UPPER[layer].includes(ln)) : setAbove.filter(([, v]) => v !== 'all').map(([ln]) => ln);
        if (by.length) { fixedAbove = by.join(', '); fixedValue = eff ? eff.value : setAbove.find(([, v]) => v !== 'all')[1]; }
      }
      let rule;
      const cid = idp + f.name.replace('.', '-');
      const nearest = setAbove.length ? setAbove[setAbove.length - 1] : null;
      if (fixedAbove) rule = `a lower layer can only narrow: fixed by ${fixedAbove}`;
      else if (f.axis === 'pref') {
        rule = nearest ? (cur === undefined ? `inherits ${fmtVal(nearest[1])} from ${nearest[0]}; a value here overrides it` : `overrides ${nearest[0]}'s ${fmtVal(nearest[1])}`)
          : (layer === 'account' ? 'overrides the gateway default' : 'unset above; a value here applies to this ' + layer);
      } else if (f.axis === 'constraint') {
        rule = setAbove.length ? 'narrows ' + setAbove.map(([ln, v]) => `${ln}'s ${fmtVal(v)}`).join(' and ') + '; it cannot widen them' : 'a lower layer can only narrow it';
      } else {
        rule = setAbove.length ? 'enforced together with ' + setAbove.map(([ln, v]) => `${ln}'s ${fmtVal(v)}`).join(' and ') : 'each layer\'s own limit is enforced';
      }
      let control;
      if (fixedAbove) {
        control = h('span', { class: 'fixed', id: cid, 'data-fixed-by': fixedAbove }, `${fmtVal(fixedValue)} — fixed by ${fixedAbove}`);
      } else if (f.type === 'select' || f.type === 'bool') {
        const opts = f.type === 'bool' ? ['true', 'false'] : f.options;
        control = h('select', { id: cid, name: f.name, 'data-orig': cur === undefined ? '' : String(cur), 'aria-describedby': cid + '-rule' },
          h('option', { value: '' }, nearest && f.axis === 'pref' ? `(inherit: ${fmtVal(nearest[1])})` : '(unset)'), opts.map((o) => h('option', { value: o, selected: String(cur) === o }, o)));
      } else {
        const v = cur === undefined ? '' : (Array.isArray(cur) ? cur.join(', ') : String(cur));
        control = h('input', { id: cid, name: f.name, value: v, 'data-orig': v, inputmode: f.type === 'int' || f.type === 'decimal' ? 'decimal' : null,
          placeholder: f.type === 'list' ? 'comma-separated' : null, 'aria-describedby': cid + '-rule' });
      }
      const ruleEl = h('span', { class: 'muted rule', id: cid + '-rule' }, rule);
      let effCell = '';
      if (eff && f.axis === 'limit') { // every layer's own limit is enforced: list them
        const sub = f.name.split('.')[1];
        effCell = Object.entries(eff.value || {}).filter(([, l]) => l && l[sub] !== undefined && l[sub] !== null)
          .map(([ln, l]) => `${ln}: ${l[sub]}`).join(', ') || '—';
      } else if (eff) effCell = fmtVal(eff.value);
      rows.push({ f, control, cid, fixedAbove, eff, effCell, ruleEl });
    }
    const cols = [
      { label: 'Field', cell: (r) => fixedAboveLabel(r) },
      { label: `This ${layer}`, cell: (r) => r.control },
      { label: 'Layer rule', cell: (r) => r.ruleEl },
    ];
    if (effective) {
      cols.push({ label: 'Effective', cell: (r) => r.effCell },
        { label: 'Fixed by', cell: (r) => r.eff ? [].concat(r.eff.fixed_by).join(', ') || '—' : '—' });
    }
    const save = h('button', { type: 'submit', id: `save-${layer}` }, `Save ${layer} settings`);
    const form = h('form', { 'aria-label': `Settings of this ${layer}`, id: `settings-${layer}` }, table(cols, rows, `Settings of this ${layer}`), h('p', {}, save), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const patch = {};
      for (const r of rows) {
        if (r.fixedAbove) continue;
        const el = r.control;
        if (el.value === el.dataset.orig) continue;
        let v = el.value.trim();
        if (v === '') v = null;
        else if (r.f.type === 'list') v = v.split(',').map((x) => x.trim()).filter(Boolean);
        else if (r.f.type === 'bool') v = v === 'true';
        else if (r.f.type === 'int' || r.f.type === 'decimal') { const n = Number(v); v = isNaN(n) ? v : n; }
        const [a, b] = r.f.name.split('.');
        if (b) { patch[a] = patch[a] || {}; patch[a][b] = v; } else patch[a] = v;
      }
      if (!Object.keys(patch).length) { swap(msg, h('p', { class: 'msg' }, 'Nothing changed.')); return; }
      save.disabled = true;
      try {
        await api('PATCH', `${layer === 'key' ? 'keys' : layer + 's'}/${encodeURIComponent(id)}`, { settings: patch });
        say('Saved'); await keysPage(); // re-read: effective values may have changed
        const m = document.getElementById(`settings-msg-${layer}`);
        if (m) swap(m, h('p', { class: 'msg ok' }, 'Saved.'));
      } catch (e) { swap(msg, errorBox(e)); save.disabled = false; }
    });
    return form;
  }
  const fixedAboveLabel = (r) => h('label', r.fixedAbove ? {} : { for: r.cid }, h('code', {}, r.f.name));

  async function keysPage() {
    const q = qs();
    const acct = q.get('account'), key = q.get('key');
    const nav = h('section', { 'aria-labelledby': 'accounts-h' }, h('h2', { id: 'accounts-h' }, 'Accounts'));
    const detail = h('section', { 'aria-label': 'Selected' });
    swap(main, h('h1', {}, 'Keys and settings'), h('div', { class: 'cols' }, nav, detail));
    try {
      const accts = await api('GET', 'accounts?limit=500');
      put(nav, h('ul', { class: 'plain', id: 'account-list' }, accts.data.map((a) => h('li', {},
        h('a', { href: '/console/keys?account=' + encodeURIComponent(a.id), 'aria-current': a.id === acct ? 'true' : null }, a.name), ' ',
        h('span', { class: 'muted mono' }, a.id)))),
      accts.next_cursor ? h('p', { class: 'muted' }, 'Showing the first 500 accounts.') : null,
      createForm('account', 'New account', async (name) => {
        const a = await api('POST', 'accounts', { name });
        location.assign('/console/keys?account=' + encodeURIComponent(a.id));
      }));
    } catch (e) { put(nav, errorBox(e)); return; }
    if (!acct) { put(detail, h('p', {}, 'Choose an account.')); return; }
    try {
      if (key) await keyDetail(detail, acct, key);
      else await accountDetail(detail, acct);
    } catch (e) { put(detail, errorBox(e)); }
  }

  function createForm(what, label, fn, extra) {
    const id = 'new-' + what;
    const msg = h('div', { 'aria-live': 'polite' });
    const form = h('form', { class: 'inline', 'aria-label': label },
      h('label', { for: id, class: 'field' }, label + ' name', h('input', { id, required: true, maxlength: 256 })), extra || null,
      h('button', { type: 'submit', id: 'create-' + what }, 'Create'), msg);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      try { await fn(form.querySelector('#' + id).value, form); } catch (e) { swap(msg, errorBox(e)); }
    });
    return h('div', {}, h('h3', {}, label), form);
  }

  async function accountDetail(box, id) {
    const [a, ws, ks, led] = await Promise.all([
      api('GET', 'accounts/' + encodeURIComponent(id)),
      api('GET', 'workspaces?limit=500&account_id=' + encodeURIComponent(id)),
      api('GET', 'keys?limit=500&revoked=include&account_id=' + encodeURIComponent(id)),
      api('GET', `accounts/${encodeURIComponent(id)}/ledger?limit=20`),
    ]);
    const wsName = new Map(ws.data.map((w) => [w.id, w.name]));
    put(box, h('h2', {}, 'Account ', a.name), h('dl', { class: 'kv' }, kv('Id', h('span', { class: 'mono' }, a.id)), kv('Billing', a.billing),
      kv('Balance', h('span', { id: 'balance' }, fmtUSD(a.balance_usd))), kv('Created', fmtTime(a.created_at))));
    put(box, h('h3', {}, 'Settings of the account'), settingsForm('account', a.id, a.settings || {}, null, null));
    // keys
    put(box, h('h3', {}, 'Keys'), ks.data.length ? table([
      { label: 'Name', cell: (k) => h('a', { href: `/console/keys?account=${encodeURIComponent(id)}&key=${encodeURIComponent(k.id)}` }, k.name) },
      { label: 'Id', cell: (k) => h('span', { class: 'mono' }, k.id) },
      { label: 'Prefix', cell: (k) => h('span', { class: 'mono' }, 'sk-sy-' + k.prefix + '…') },
      { label: 'Workspace', cell: (k) => k.workspace_id ? (wsName.get(k.workspace_id) || k.workspace_id) : '—' },
      { label: 'State', cell: (k) => k.revoked_at ? h('span', { class: 'bad' }, 'revoked ' + fmtTime(k.revoked_at)) : 'active' },
    ], ks.data, 'Keys of the account') : h('p', {}, 'No keys yet.'));
    const wsSelect = h('label', { class: 'field', for: 'new-key-ws' }, 'Workspace', h('select', { id: 'new-key-ws' }, h('option', { value: '' }, '(none)'), ws.data.map((w) => h('option', { value: w.id }, w.name))));
    const secretBox = h('div', { id: 'secret-box', 'aria-live': 'polite' });
    put(box, createForm('key', 'New key', async (name, form) => {
      const body = { account_id: id, name };
      const w = form.querySelector('#new-key-ws').value;
      if (w) body.workspace_id = w;
      const k = await api('POST', 'keys', body);
      swap(secretBox, h('div', { class: 'secret', role: 'alert' },
        h('p', {}, h('strong', {}, 'Copy this secret now: it is shown only once.')),
        h('p', {}, h('code', { id: 'new-secret' }, k.secret)),
        h('p', {}, h('a', { href: `/console/keys?account=${encodeURIComponent(id)}&key=${encodeURIComponent(k.id)}` }, 'Open the key ' + k.name))));
      form.reset();
    }, wsSelect), secretBox);
    // workspaces
    put(box, h('h3', {}, 'Workspaces'), ws.data.length ? h('ul', {}, ws.data.map((w) => h('li', {}, w.name, ' ', h('span', { class: 'muted mono' }, w.id),
      Object.keys(w.settings || {}).length ? h('span', { class: 'muted' }, ' settings: ' + JSON.stringify(w.settings)) : null))) : h('p', {}, 'No workspaces.'),
    createForm('workspace', 'New workspace', async (name) => { await api('POST', 'workspaces', { account_id: id, name }); await keysPage(); }));
    // credits and ledger
    const cmsg = h('div', { 'aria-live': 'polite' });
    const credit = h('form', { class: 'inline', 'aria-label': 'Add credit' },
      h('label', { class: 'field', for: 'credit-amount' }, 'Amount (USD)', h('input', { id: 'credit-amount', inputmode: 'decimal', required: true, pattern: '[0-9]+(\\.[0-9]{1,6})?' })),
      h('button', { type: 'submit' }, 'Add credit'), cmsg);
    credit.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const v = credit.querySelector('#credit-amount').value.trim();
      try {
        const r = await api('POST', `accounts/${encodeURIComponent(id)}/credits`, `{"amount_usd":${/^[0-9]+(\.[0-9]{1,6})?$/.test(v) ? v : JSON.stringify(v)}}`);
        document.getElementById('balance').textContent = fmtUSD(r.balance_usd);
        say('Credited'); await keysPage();
      } catch (e) { swap(cmsg, errorBox(e)); }
    });
    put(box, h('h3', {}, 'Credits and ledger'), credit, led.entries.length ? table([
      { label: 'At', cell: (e) => fmtTime(e.at) },
      { label: 'Kind', cell: (e) => e.kind + (e.mark ? ' (' + e.mark + ')' : '') },
      { label: 'Request', cell: (e) => e.request_id ? h('a', { class: 'mono', href: '/console/logs?request=' + encodeURIComponent(e.request_id) }, e.request_id) : '—' },
      { label: 'Key', cell: (e) => h('span', { class: 'mono' }, e.key_id || '—') },
      { label: 'Model', cell: (e) => e.model || '—' },
      { label: 'Deployment', cell: (e) => e.deployment || '—' },
      { label: 'Tokens in / out', num: true, cell: (e) => `${e.tokens.input} / ${e.tokens.output}` },
      { label: 'Amount', num: true, cell: (e) => fmtUSD(e.cost_usd) },
    ], led.entries, 'Ledger, newest first') : h('p', {}, 'No ledger entries.'));
  }

  async function keyDetail(box, acct, id) {
    const [a, k] = await Promise.all([api('GET', 'accounts/' + encodeURIComponent(acct)), api('GET', 'keys/' + encodeURIComponent(id))]);
    let eff = null, effErr = null;
    try { eff = (await api('GET', `keys/${encodeURIComponent(id)}/effective`)).settings; } catch (e) { effErr = e; }
    put(box, h('p', {}, h('a', { href: '/console/keys?account=' + encodeURIComponent(acct) }, '← Account ' + a.name)),
      h('h2', {}, 'Key ', k.name),
      h('dl', { class: 'kv' }, kv('Id', h('span', { class: 'mono' }, k.id)), kv('Prefix', h('span', { class: 'mono' }, 'sk-sy-' + k.prefix + '…')),
        kv('Workspace', k.workspace_id || '—'), kv('State', h('span', { id: 'key-state' }, k.revoked_at ? 'revoked ' + fmtTime(k.revoked_at) : 'active')), kv('Created', fmtTime(k.created_at))));
    if (effErr) put(box, errorBox(effErr));
    let ws = null;
    if (k.workspace_id) try { ws = await api('GET', 'workspaces/' + encodeURIComponent(k.workspace_id)); } catch (e) { put(box, errorBox(e)); }
    const upper = [['account', a.settings || {}]];
    if (ws) upper.push(['workspace', ws.settings || {}]);
    put(box, h('h3', {}, 'Settings by layer'), h('p', { class: 'muted' }, 'A preference set on this key overrides the account\'s and the workspace\'s; a constraint can only narrow theirs; every layer\'s limits apply together.'),
      settingsForm('key', k.id, k.settings || {}, eff, upper));
    if (!k.revoked_at) {
      const confirmBtn = h('button', { type: 'button', class: 'danger', id: 'revoke-confirm', hidden: true }, 'Yes, revoke ' + k.name);
      const rmsg = h('div', { 'aria-live': 'polite' });
      const btn = h('button', { type: 'button', class: 'danger', id: 'revoke' }, 'Revoke key');
      btn.addEventListener('click', () => { confirmBtn.hidden = false; confirmBtn.focus(); });
      confirmBtn.addEventListener('click', async () => {
        try { await api('DELETE', 'keys/' + encodeURIComponent(id)); say('Key revoked'); await keysPage(); } catch (e) { swap(rmsg, errorBox(e)); }
      });
      put(box, h('h3', {}, 'Revoke'), h('p', {}, 'A revoked key stops working at once; it cannot be restored.'), h('p', { class: 'row' }, btn, confirmBtn), rmsg);
    }
  }

  // ---- Overview ----
  // Charts are plain SVG built with DOM calls: no library, no inline style (the CSP forbids it).
  const SVG = 'http://www.w3.org/2000/svg';
  function s(tag, attrs, ...kids) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) e.setAttribute(k, v);
    for (const c of kids.flat(Infinity)) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
    return e;
  }
  const W = 640, H = 180, PAD = { l: 66, r: 8, t: 8, b: 22 };
  const niceMax = (v) => { if (!(v > 0)) return 1; const p = Math.pow(10, Math.floor(Math.log10(v))); return Math.ceil(v / p) * p; };
  const tick = (t, bucket) => { const d = new Date(t); return bucket >= 86400 ? d.toLocaleDateString() : d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }); };
  // chart draws a bar chart (stacked series) or a line chart of points (x = bucket index).
  // series: [{name, cls, values: [number|null]}]; fmt formats the axis and the titles.
  function chart(id, title, kind, starts, bucket, series, fmt) {
    const n = starts.length, iw = W - PAD.l - PAD.r, ih = H - PAD.t - PAD.b;
    const totals = starts.map((_, i) => kind === 'bar' ? series.reduce((a, x) => a + (x.values[i] || 0), 0) : Math.max(0, ...series.map((x) => x.values[i] || 0)));
    const top = niceMax(Math.max(0, ...totals));
    const y = (v) => PAD.t + ih - (v / top) * ih, bw = iw / Math.max(n, 1);
    const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-labelledby': id + '-t', id },
      s('title', { id: id + '-t' }, title),
      [0, 0.5, 1].map((f) => [s('line', { x1: PAD.l, x2: W - PAD.r, y1: y(top * f), y2: y(top * f), class: 'grid' }),
        s('text', { x: PAD.l - 4, y: y(top * f) + 4, class: 'axis', 'text-anchor': 'end' }, fmt(top * f))]),
      [0, Math.floor(n / 2), n - 1].filter((i, j, a) => i >= 0 && a.indexOf(i) === j).map((i) =>
        s('text', { x: i === n - 1 && n > 1 ? W - PAD.r : PAD.l + (i + 0.5) * bw, y: H - 6, class: 'axis', 'text-anchor': i === n - 1 && n > 1 ? 'end' : 'middle' }, tick(starts[i], bucket))));
    if (kind === 'bar') {
      starts.forEach((t, i) => {
        let base = 0;
        for (const x of series) {
          const v = x.values[i] || 0;
          if (v <= 0) continue;
          put(svg, s('rect', { x: PAD.l + i * bw + bw * 0.1, width: Math.max(bw * 0.8, 1), y: y(base + v), height: Math.max(y(base) - y(base + v), 0.5), class: 'bar ' + x.cls },
            s('title', {}, `${tick(t, bucket)} ${x.name}: ${fmt(v)}`)));
          base += v;
        }
      });
    } else {
      for (const x of series) {
        let d = '';
        x.values.forEach((v, i) => { if (v === null || v === undefined) return; d += (d && x.values[i - 1] !== null && x.values[i - 1] !== undefined ? 'L' : 'M') + (PAD.l + (i + 0.5) * bw).toFixed(1) + ' ' + y(v).toFixed(1); });
        if (d) put(svg, s('path', { d, class: 'line ' + x.cls }, s('title', {}, x.name)));
        x.values.forEach((v, i) => { if (v !== null && v !== undefined) put(svg, s('circle', { cx: PAD.l + (i + 0.5) * bw, cy: y(v), r: 2.5, class: 'dot ' + x.cls }, s('title', {}, `${tick(starts[i], bucket)} ${x.name}: ${fmt(v)}`))); });
      }
    }
    const legend = h('ul', { class: 'legend' }, series.map((x) => h('li', {}, h('span', { class: 'swatch ' + x.cls, 'aria-hidden': 'true' }), x.name)));
    return h('figure', { class: 'chartbox' }, h('figcaption', {}, title), svg, legend);
  }
  const CLASS_COLORS = 8;
  const fmtInt = (v) => (v >= 1e6 ? (v / 1e6).toFixed(1) + 'M' : v >= 1e4 ? (v / 1e3).toFixed(1) + 'k' : String(Math.round(v * 100) / 100));
  const fmtBucket = (sec) => sec >= 3600 ? (sec / 3600) + ' h' : (sec / 60) + ' min';

  async function overviewPage() {
    const q = qs();
    const win = ['1h', '24h', '7d'].includes(q.get('window')) ? q.get('window') : '24h';
    swap(main, h('h1', {}, 'Overview'), h('nav', { class: 'row windows', 'aria-label': 'Window' },
      ['1h', '24h', '7d'].map((w) => h('a', { href: '/console/overview?window=' + w, 'aria-current': w === win ? 'true' : null, id: 'win-' + w }, 'Last ' + w))));
    const auto = h('input', { type: 'checkbox', id: 'autorefresh', checked: true });
    const state = h('span', { class: 'muted', id: 'overview-state' });
    put(main, h('p', { class: 'row' }, h('label', { for: 'autorefresh' }, auto, ' Refresh every 3 s'), state));
    let body = h('div', { id: 'overview' });
    put(main, body);
    let last = '';
    const render = (o) => {
      const t = o.totals, b = o.bucket_seconds, starts = o.series.map((p) => p.start);
      const rate = t.requests ? (100 * t.errors / t.requests) : 0;
      const classes = o.classes.map((c) => c.class);
      const card = (id, label, value) => h('div', { class: 'card', id }, h('div', { class: 'muted' }, label), h('div', { class: 'big' }, value));
      const topTable = (id, title, rows, name) => h('section', { class: 'top-list', id }, h('h2', {}, title), rows.length === 0 ? h('p', { class: 'muted' }, 'None in this window.') : table([
        { label: 'Name', cell: (r) => name(r) },
        { label: 'Requests', num: true, cell: (r) => String(r.requests) },
        { label: 'Failed', num: true, cell: (r) => String(r.errors) },
        { label: 'Tokens in / out', num: true, cell: (r) => `${r.input_tokens} / ${r.output_tokens}` },
        { label: 'Cost', num: true, cell: (r) => fmtUSD(r.cost_usd) },
      ], rows, title));
      const logLink = (param, v, text) => h('a', { href: '/console/logs?' + new URLSearchParams({ [param]: v }) }, text);
      body = replace(body, h('div', { id: 'overview' },
        h('div', { class: 'cards' },
          card('total-requests', 'Requests', String(t.requests)),
          card('total-errors', 'Failed', `${t.errors} (${rate.toFixed(1)}%)`),
          card('total-cost', 'Spend', fmtUSD(t.cost_usd)),
          card('total-tokens', 'Tokens in / out', `${t.input_tokens} / ${t.output_tokens}`)),
        o.classes.length ? h('p', { id: 'failure-classes' }, 'Failures by class: ', o.classes.map((c, i) => [i ? ', ' : '', logLink('class', c.class, c.class), ` ${c.requests}`])) : null,
        h('div', { class: 'charts' },
          chart('chart-requests', `Requests per ${fmtBucket(b)}, failures by class`, 'bar', starts, b, [
            { name: 'succeeded', cls: 'c-ok', values: o.series.map((p) => p.requests - p.errors) },
            ...classes.map((c, i) => ({ name: c, cls: 'c-err' + (i % CLASS_COLORS), values: o.series.map((p) => p.classes[c] || 0) })),
          ], fmtInt),
          chart('chart-latency', 'Latency and time to first token (ms)', 'line', starts, b, [
            { name: 'p50', cls: 'c-p50', values: o.series.map((p) => p.latency_p50_ms) },
            { name: 'p99', cls: 'c-p99', values: o.series.map((p) => p.latency_p99_ms) },
            { name: 'TTFT p50', cls: 'c-t50', values: o.series.map((p) => p.ttft_p50_ms) },
            { name: 'TTFT p99', cls: 'c-t99', values: o.series.map((p) => p.ttft_p99_ms) },
          ], (v) => fmtInt(v)),
          chart('chart-spend', `Spend per ${fmtBucket(b)} (USD)`, 'bar', starts, b, [
            { name: 'spend', cls: 'c-cost', values: o.series.map((p) => p.cost_usd) },
          ], (v) => fmtUSD(v)),
          chart('chart-tokens', `Tokens per ${fmtBucket(b)}`, 'bar', starts, b, [
            { name: 'in', cls: 'c-in', values: o.series.map((p) => p.input_tokens) },
            { name: 'out', cls: 'c-out', values: o.series.map((p) => p.output_tokens) },
          ], fmtInt)),
        h('div', { class: 'tops' },
          topTable('top-models', 'Top models', o.top_models, (r) => logLink('model', r.name, r.name)),
          topTable('top-deployments', 'Top deployments', o.top_deployments, (r) => logLink('deployment', r.name, r.name)),
          topTable('top-keys', 'Top keys', o.top_keys, (r) => logLink('key_id', r.name, o.key_names[r.name] || r.name)),
          topTable('top-accounts', 'Top accounts', o.top_accounts, (r) => logLink('account_id', r.name, r.name)))));
    };
    const load = async () => {
      try {
        const o = await api('GET', 'overview?window=' + win);
        const sig = JSON.stringify([o.totals, o.series, o.top_models, o.top_deployments, o.top_keys, o.top_accounts]);
        if (sig !== last) { last = sig; render(o); }
        state.textContent = 'Updated ' + new Date().toLocaleTimeString();
      } catch (e) { body = replace(body, h('div', { id: 'overview' }, errorBox(e))); }
    };
    await load();
    every(REFRESH_MS, () => auto.checked ? load() : null);
  }

  // ---- start ----
  document.getElementById('logout').addEventListener('click', async () => {
    await fetch('/console/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-Switchyard-Csrf': csrf } });
    location.assign('/console/login');
  });
  const page = location.pathname.replace(/\/+$/, '').split('/').pop();
  const pages = { overview: overviewPage, logs: logsPage, models: modelsPage, keys: keysPage, console: overviewPage };
  const name = pages[page] ? (page === 'console' ? 'overview' : page) : 'overview';
  for (const a of document.querySelectorAll('nav a')) if (a.dataset.page === name) a.setAttribute('aria-current', 'page');
  document.title = { overview: 'Overview', logs: 'Logs', models: 'Models', keys: 'Keys and settings' }[name] + ' · Switchyard console';
  pages[name]().catch((e) => put(main, errorBox(e)));
})();
