// Mariposa's web console: a page of mariposad's HTTP/JSON API
// (docs/console.md). Everything it shows comes from /v1/…; it keeps the
// token in this tab's sessionStorage only and never displays it. Text is
// always set with textContent, never parsed as HTML.
'use strict';

const session = {
  token: sessionStorage.getItem('mariposa.token') || '',
  who: null,
};
let pageCleanup = [];  // stops the current page's streams and timers

// ---- API -------------------------------------------------------------------

class ApiError extends Error {
  constructor(status, info) {
    super(info.message || `HTTP ${status}`);
    this.status = status;
    this.info = info;
  }
}

async function api(method, path, body) {
  const opts = {method, headers: {}};
  if (session.token) opts.headers['Authorization'] = 'Bearer ' + session.token;
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  const text = await res.text();
  let data;
  try { data = JSON.parse(text); } catch (e) { data = {message: text}; }
  if (!res.ok) {
    if (res.status === 401 && location.hash !== '#/login') {
      session.token = '';
      sessionStorage.removeItem('mariposa.token');
    }
    throw new ApiError(res.status, data);
  }
  return data;
}

const enc = encodeURIComponent;

// Server-Sent Events over fetch (EventSource cannot send a token): calls
// onEvent with each parsed `data:` and reconnects from the last id.
function watch(path, onEvent) {
  const ctl = {stopped: false, abort: null, lastId: ''};
  async function run() {
    while (!ctl.stopped) {
      const abort = new AbortController();
      ctl.abort = abort;
      try {
        const headers = {'Authorization': 'Bearer ' + session.token};
        if (ctl.lastId) headers['Last-Event-ID'] = ctl.lastId;
        const res = await fetch(path, {headers, signal: abort.signal});
        if (!res.ok) return;
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buf = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buf += decoder.decode(value, {stream: true});
          let at;
          while ((at = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, at);
            buf = buf.slice(at + 2);
            let data = '', id = '', kind = '';
            for (const line of block.split('\n')) {
              if (line.startsWith('data: ')) data += line.slice(6);
              else if (line.startsWith('id: ')) id = line.slice(4);
              else if (line.startsWith('event: ')) kind = line.slice(7);
            }
            if (id) ctl.lastId = id;
            if (data && kind !== 'error') onEvent(JSON.parse(data));
          }
        }
      } catch (e) {
        if (ctl.stopped) return;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  run();
  return () => { ctl.stopped = true; if (ctl.abort) ctl.abort.abort(); };
}

// ---- DOM helpers -------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v;  // CSSOM: allowed by the page's CSP, unlike style=
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Replaces el's children with nodes (nested arrays flattened; null, false
// and undefined left out).
function fill(el, ...nodes) {
  el.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false)
      .map((n) => (n instanceof Node ? n : document.createTextNode(String(n)))));
}

function badge(prefix, value) {
  return h('span', {class: `badge ${prefix}-${value || 'unknown'}`}, value || 'unknown');
}

function when(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toISOString().replace('T', ' ').slice(0, 19);
}

// RFD 40's four parts, as the API returns them.
function errorBox(e) {
  const info = e instanceof ApiError ? e.info : {error: String(e.message || e)};
  const parts = [['Error', info.error || info.message], ['Reason', info.reason], ['Fix', info.fix],
                 ['Impact', info.impact]];
  return h('div', {class: 'error', role: 'alert'},
      h('strong', {}, info.status ? `${info.status}` : 'Error'),
      h('dl', {}, parts.filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
}

function say(text) { document.getElementById('live').textContent = text; }

function table(headers, rows) {
  return h('table', {},
      h('thead', {}, h('tr', {}, headers.map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', {}, rows));
}

// What a page's buttons do: run fn, then show `ok` (or the refusal, in
// RFD 40's four parts) as the page's message and reload it.
function actor(page, reload) {
  return async (fn, ok) => {
    try {
      await fn();
      page.message = h('div', {class: 'notice', role: 'status'}, ok);
      say(ok);
    } catch (e) {
      page.message = errorBox(e);
    }
    reload();
  };
}

async function allowed(action, project) {
  try {
    const r = await api('GET', `/v1/auth/can-i?action=${enc(action)}&project=${enc(project || '')}`);
    return r.allowed;
  } catch (e) {
    return false;
  }
}

// Each navigation renders into a root of its own: a page still loading
// when the user moves on renders into a root no longer in the document.
function render(root, ...nodes) {
  fill(root, nodes);
}

// ---- pages -------------------------------------------------------------------

function loginPage(root, error) {
  const input = h('input', {id: 'token', type: 'password', autocomplete: 'off', required: true,
                            'aria-describedby': 'token-help'});
  const form = h('form', {class: 'login', onsubmit: async (ev) => {
    ev.preventDefault();
    session.token = input.value.trim();
    try {
      session.who = await api('GET', '/v1/auth/whoami');
      sessionStorage.setItem('mariposa.token', session.token);
      if (location.hash === '#/') route();
      else location.hash = '#/';  // hashchange routes
    } catch (e) {
      session.token = '';
      loginPage(root, e);
    }
  }},
  h('div', {class: 'field'},
      h('label', {for: 'token'}, 'Token'), input,
      h('span', {id: 'token-help', class: 'muted'},
          'A token from `mariposa admin token create`. It stays in this tab and is never shown.')),
  h('button', {type: 'submit', id: 'login'}, 'Log in'));
  render(root, h('h1', {}, 'Log in'), error ? errorBox(error) : null, form);
  input.focus();
}

async function projectsPage(root) {
  render(root, h('h1', {}, 'Projects'), h('p', {class: 'muted'}, 'Loading…'));
  const [list, canApply] = await Promise.all([api('GET', '/v1/projects'), allowed('Projects/Apply', '')]);
  const rows = await Promise.all(list.projects.map(async (p) => {
    let verdict = 'unknown', counts = '';
    try {
      const st = await api('GET', `/v1/projects/${enc(p.name)}/state?omit_instances=true`);
      const svcs = st.services || [];
      const bad = svcs.find((s) => s.verdict !== 'converged');
      verdict = svcs.length === 0 ? 'converged' : bad ? bad.verdict : 'converged';
      const ready = svcs.reduce((n, s) => n + Number(s.ready), 0);
      const desired = svcs.reduce((n, s) => n + Number(s.desired), 0);
      counts = `${ready}/${desired} ready`;
    } catch (e) {
      counts = e.message;
    }
    return h('tr', {'data-project': p.name},
        h('td', {}, h('a', {href: `#/p/${enc(p.name)}`}, p.name)),
        h('td', {}, p.description),
        h('td', {}, `v${p.current_version_number}`),
        h('td', {}, String(p.service_count)),
        h('td', {}, badge('v', verdict), ' ', counts),
        h('td', {}, p.deleting ? 'being deleted' : ''));
  }));
  render(root, h('h1', {}, 'Projects'),
      canApply ? h('p', {}, h('a', {href: '#/apply', id: 'new-project'}, 'Apply a manifest')) : null,
      rows.length ? table(['Project', 'Description', 'Version', 'Services', 'State', ''], rows)
                  : h('p', {id: 'no-projects'}, 'No projects you may see.'));
}

function tabs(name, current) {
  const t = [['overview', 'Overview'], ['queue', 'Queue'], ['events', 'Events'], ['versions', 'Versions'],
             ['meta', 'Meta'], ['datacenters', 'Data centers'], ['apply', 'Apply']];
  return h('nav', {class: 'tabs', 'aria-label': 'Project'},
      t.map(([id, label]) => h('a', {href: `#/p/${enc(name)}/${id}`, 'aria-current': id === current ? 'page' : null},
                               label)));
}

// Reloads `load` when the project's events arrive (debounced) and every 5 s.
function live(root, name, load) {
  if (!root.isConnected) return;  // the user moved on
  let pending = null;
  const again = () => {
    if (pending) return;
    pending = setTimeout(() => { pending = null; load(); }, 300);
  };
  const stop = watch(`/v1/projects/${enc(name)}/events:watch?tail=true`, again);
  const timer = setInterval(load, 5000);
  pageCleanup.push(stop, () => clearInterval(timer), () => clearTimeout(pending));
}

async function overviewPage(root, name) {
  const head = [h('h1', {}, name), tabs(name, 'overview')];
  const out = h('div', {id: 'overview'});
  render(root, head, out);
  const [canScale, canFreeze, project] = await Promise.all([
    allowed('Projects/Scale', name), allowed('Queue/Freeze', name),
    api('GET', `/v1/projects/${enc(name)}`).catch(() => ({project: {}}))]);
  // Each service's update settings (canary, batches, deadlines) from its spec.
  const updates = {};
  for (const svc of project.project.services || []) {
    try { updates[svc.name] = JSON.parse(svc.spec_json).update || {}; } catch (e) { updates[svc.name] = {}; }
  }
  let message = null;
  const load = async (force) => {
    // Not while the user types a count: the table would be redrawn under them.
    if (!force && out.contains(document.activeElement) && document.activeElement.tagName === 'INPUT') return;
    let st, tasks;
    try {
      [st, tasks] = await Promise.all([api('GET', `/v1/projects/${enc(name)}/state?omit_instances=true`),
                                       api('GET', `/v1/projects/${enc(name)}/tasks?finished_limit=0`)]);
    } catch (e) {
      fill(out, errorBox(e));
      return;
    }
    const svcs = st.services || [];
    const converged = st.converged;
    const rows = svcs.map((s) => {
      const input = h('input', {type: 'number', min: '0', value: s.desired, 'aria-label': `Count of ${s.name}`,
                                class: 'scale-count', style: 'width: 6em'});
      const scale = canScale && !s.agent && !(s.runs && s.runs.service_type) ? h('form', {class: 'row', onsubmit: async (ev) => {
        ev.preventDefault();
        try {
          await api('POST', `/v1/projects/${enc(name)}:scale`, {changes: [`${s.name}=${input.value}`]});
          message = h('div', {class: 'notice', role: 'status'}, `${s.name} scaled to ${input.value}`);
        } catch (e) {
          message = errorBox(e);
        }
        load(true);
      }}, input, h('button', {type: 'submit', class: 'secondary'}, 'Scale')) : null;
      return h('tr', {'data-service': s.name},
          h('td', {}, h('a', {href: `#/p/${enc(name)}/instances/${enc(s.name)}`}, s.name)),
          h('td', {}, badge('v', s.verdict), s.frozen ? h('span', {class: 'badge v-paused'}, 'frozen') : null),
          h('td', {}, `${s.ready}/${s.desired}`),
          h('td', {}, String(s.running)),
          s.checked ? h('td', {}, String(s.healthy))
                    : h('td', {title: 'no health checks run for this service: healthy does not apply'}, '—'),
          h('td', {}, String(s.updating)),
          h('td', {}, s.reason, s.fix ? h('div', {class: 'muted'}, 'Fix: ', s.fix) : null),
          h('td', {}, scale));
    });
    const rollouts = (tasks.tasks || []).filter((t) => t.kind === 'reprovision' && ['queued', 'active'].includes(t.state));
    const problems = (st.problems || []).map((p) => h('div', {class: 'error', role: 'alert'},
        h('strong', {}, p.kind + (p.service ? ` (${p.service})` : '')),
        h('dl', {}, [['Error', p.error], ['Reason', p.reason], ['Fix', p.fix], ['Impact', p.impact]]
            .filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]))));
    // What the project holds besides its services (docs/manifest.md): its
    // runs, CNS names, fabric networks, volumes and firewall rules.
    const runs = svcs.filter((s) => s.runs && s.runs.service_type).map((s) => h('tr', {'data-runs': s.name},
        h('td', {}, s.name), h('td', {}, s.runs.schedule || 'event (on `mariposa run`)'),
        h('td', {}, (s.runs.active || []).join('; ') || '-'), h('td', {}, s.runs.last || '-'),
        h('td', {}, s.runs.next ? when(s.runs.next) : '-'), h('td', {}, s.runs.held || '-')));
    const cns = svcs.filter((s) => (s.cns_names || []).length)
        .map((s) => h('tr', {}, h('td', {}, s.name), h('td', {}, s.cns_names.join(', '))));
    const mib = (n) => Number(n) ? `${Math.round(Number(n) / 1024)} GiB` : 'default';
    const nets = (st.fabric_networks || []).map((n) => h('tr', {'data-network': n.name},
        h('td', {}, n.name), h('td', {}, n.state), h('td', {}, n.subnet), h('td', {}, n.napi_name),
        h('td', {}, n.error || '-')));
    const vols = (st.volumes || []).map((v) => h('tr', {'data-volume': v.name},
        h('td', {}, v.name), h('td', {}, v.state), h('td', {}, mib(v.size_mib)), h('td', {}, v.network || '-'),
        h('td', {}, v.volapi_name), h('td', {}, String((v.mounted_by || []).length)), h('td', {}, v.error || '-')));
    const rules = (st.firewall_rules || []).map((r) => h('tr', {'data-rule': r.name},
        h('td', {}, r.name), h('td', {}, r.state), h('td', {}, r.rule), h('td', {}, r.error || '-')));
    const section = (title, headers, list) => list.length ? [h('h2', {}, title), table(headers, list)] : null;
    fill(out,
        h('p', {id: 'verdict'}, 'Project: ',
          st.deleting ? h('span', {class: 'badge v-progressing'}, 'being deleted')
                      : badge('v', converged ? 'converged' : 'progressing'),
          ` version ${st.version}`, st.observed_at ? h('span', {class: 'muted'}, ` · read ${when(st.observed_at)}`) : ''),
        message,
        problems.length ? [h('h2', {}, 'Problems'), problems] : null,
        rollouts.length ? [h('h2', {}, 'Rollout'), rollouts.map((t) => rolloutView(t, svcs, updates))] : null,
        h('h2', {}, 'Services'),
        table(['Service', 'Verdict', 'Ready', 'Running', 'Healthy', 'Updating', 'Why / fix', ''], rows),
        section('Runs', ['Service', 'Schedule', 'Active', 'Last', 'Next', 'Held'], runs),
        section('CNS names', ['Service', 'Names (triton.cns.services)'], cns),
        section('Fabric networks', ['Network', 'State', 'Subnet', 'NAPI name', 'Last error'], nets),
        section('Volumes', ['Volume', 'State', 'Size', 'Network', 'VOLAPI name', 'Mounts', 'Last error'], vols),
        section('Firewall rules', ['Rule', 'State', 'Rule text', 'Last error'], rules),
        canFreeze ? null : h('p', {class: 'muted'}, 'Your role may look, not change.'));
  };
  await load();
  live(root, name, load);
}

// A reprovision's progress: its scope's instances ready at the new spec out
// of those wanted, its batches and canary, the health gate and deadlines.
function rolloutView(t, svcs, updates) {
  const scope = (t.services || []).length ? svcs.filter((s) => t.services.includes(s.name)) : svcs;
  const desired = scope.reduce((n, s) => n + Number(s.desired), 0);
  const ready = scope.reduce((n, s) => n + Number(s.ready), 0);
  const pct = desired > 0 ? Math.round(100 * ready / desired) : 0;
  const u = scope.length ? (updates[scope[0].name] || {}) : {};
  const canary = Number(t.canary) > 0 ? t.canary : u.canary;
  const batch = Number(t.rolling) > 0 ? t.rolling : u.rolling;
  const facts = [
    batch ? `batches of ${batch}` : null,
    u.max_surge !== undefined ? `at most ${u.max_surge} above count` : null,
    Number(canary) > 0 ? `canary: stops after ${canary} for a look` : null,
    'health gate: each new instance must be ready (healthy when checked) before the next batch',
    u.min_healthy_time ? `ready for ${u.min_healthy_time}` : null,
    u.healthy_deadline ? `healthy deadline ${u.healthy_deadline}` : null,
    u.progress_deadline ? `progress deadline ${u.progress_deadline}` : 'no progress deadline',
    u.auto_rollback ? 'rolls back on its own if it fails' : null,
  ].filter(Boolean);
  return h('div', {class: 'rollout', 'data-task': t.uuid},
      h('p', {}, h('strong', {}, `${t.kind} of ${(t.services || []).join(', ') || 'the project'}`), ' ', badge('t', t.state),
        ' ', h('span', {class: 'progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': String(desired),
                          'aria-valuenow': String(ready), 'aria-label': 'Instances ready at the new spec'},
               h('span', {style: `width: ${pct}%`})),
        ` ${ready}/${desired} ready at the new spec · ${t.created} created, ${t.deleted} removed, ${t.failed} failed`),
      h('p', {class: 'muted'}, facts.join(' · ')),
      t.paused ? h('p', {}, `Paused: ${t.paused}`) : null,
      (t.wait_for || []).length ? h('p', {}, `Waits for ${t.wait_for.join(', ')}`) : null,
      t.error ? h('p', {class: 'error'}, `Error: ${t.error}`) : null);
}

async function instancesPage(root, name, service) {
  render(root, h('h1', {}, `${name} / ${service}`), tabs(name, 'overview'), h('p', {class: 'muted'}, 'Loading…'));
  let st;
  try {
    st = await api('GET', `/v1/projects/${enc(name)}/state?service=${enc(service)}`);
  } catch (e) {
    render(root, h('h1', {}, `${name} / ${service}`), tabs(name, 'overview'), errorBox(e));
    return;
  }
  const svc = (st.services || []).find((s) => s.name === service) || {instances: []};
  // In natural order: web-2 before web-10 (one collator: localeCompare with
  // options builds one per call, seconds at 10,000 instances).
  const natural = new Intl.Collator(undefined, {numeric: true});
  const all = (svc.instances || []).slice().sort((a, b) => natural.compare(a.alias || a.uuid, b.alias || b.uuid));
  const filter = h('input', {id: 'instance-filter', type: 'search', placeholder: 'alias, state, health, server, discovery…'});
  // One ARIA table: the header row, then the scrolled rows (only those in
  // view are in the page; aria-rowindex says where each is).
  const box = h('div', {class: 'virtual', role: 'rowgroup', tabindex: '0', 'aria-label': 'Scroll the instances'});
  const spacer = h('div', {class: 'spacer', role: 'presentation'});
  box.append(spacer);
  const rowH = 30;
  let shown = all;
  const draw = () => {
    const first = Math.max(0, Math.floor(box.scrollTop / rowH) - 10);
    const last = Math.min(shown.length, first + Math.ceil(box.clientHeight / rowH) + 20);
    spacer.style.height = `${shown.length * rowH}px`;
    const rows = [];
    for (let i = first; i < last; i++) {
      const x = shown[i];
      rows.push(h('div', {class: 'vrow', role: 'row', style: `top: ${i * rowH}px`, 'aria-rowindex': String(i + 2)},
          h('span', {role: 'cell'}, x.alias || x.uuid), h('span', {role: 'cell'}, badge('s', x.state)),
          h('span', {role: 'cell', title: x.liveness ? `ready ${x.health}, live ${x.liveness}` : ''}, badge('h', x.health)),
          h('span', {role: 'cell', title: x.image_uuid}, x.image_uuid.slice(0, 8)),
          h('span', {role: 'cell'}, `v${x.version}${x.current_spec ? '' : ' (old spec)'}`),
          h('span', {role: 'cell', title: x.server_uuid}, x.server_hostname || x.server_uuid.slice(0, 8)),
          h('span', {role: 'cell'}, x.ip),
          // In CNS's records or out, and why (docs/health.md "Discovery follows readiness").
          h('span', {role: 'cell', title: x.discovery || ''}, x.discovery || '—')));
    }
    fill(spacer, ...rows);
  };
  filter.addEventListener('input', () => {
    const q = filter.value.toLowerCase();
    shown = q ? all.filter((x) => [x.alias, x.state, x.health, x.server_hostname, x.server_uuid, x.image_uuid, x.ip,
                                   x.discovery]
        .some((v) => (v || '').toLowerCase().includes(q))) : all;
    box.scrollTop = 0;
    draw();
  });
  box.addEventListener('scroll', draw);
  render(root, h('h1', {}, `${name} / ${service}`), tabs(name, 'overview'),
      h('p', {}, badge('v', svc.verdict), ` ${svc.ready}/${svc.desired} ready · ${all.length} instances`),
      h('div', {class: 'field'}, h('label', {for: 'instance-filter'}, 'Filter'), filter),
      h('div', {role: 'table', 'aria-label': `Instances of ${service}`, 'aria-rowcount': String(all.length + 1),
                 class: 'vtable'},
        h('div', {role: 'rowgroup'},
          h('div', {class: 'vhead', role: 'row', 'aria-rowindex': '1'},
            ['Instance', 'State', 'Health', 'Image', 'Version', 'Server', 'IP', 'Discovery']
                .map((t) => h('span', {role: 'columnheader'}, t)))),
        box));
  draw();
}

async function queuePage(root, name) {
  const out = h('div', {id: 'queue'});
  render(root, h('h1', {}, name), tabs(name, 'queue'), out);
  const [canFreeze, canThaw, canCancel, canPause, canReprovision, st] = await Promise.all([
    allowed('Queue/Freeze', name), allowed('Queue/Thaw', name), allowed('Queue/TerminateTask', name),
    allowed('Queue/PauseTask', name), allowed('Queue/AddTask', name),
    api('GET', `/v1/projects/${enc(name)}/state?omit_instances=true`).catch(() => ({services: []}))]);
  const page = {message: null};
  const act = actor(page, () => load());
  const reason = h('input', {id: 'freeze-reason', type: 'text', placeholder: 'why (shown to others)'});
  const controls = h('div', {class: 'row'},
      canFreeze ? [h('label', {for: 'freeze-reason'}, 'Reason'), reason,
                   h('button', {id: 'freeze', type: 'button', onclick: () => act(
                       () => api('POST', `/v1/projects/${enc(name)}:freeze`, {reason: reason.value}), 'Frozen')},
                     'Freeze project')] : null,
      canThaw ? h('button', {id: 'thaw', type: 'button', class: 'secondary', onclick: () => act(
                    () => api('POST', `/v1/projects/${enc(name)}:thaw`, {}), 'Thawed')}, 'Thaw project') : null);
  // A reprovision of some services, or of the instances a filter picks
  // (docs/cli.md, `mariposa reprovision`): by version, image, server.
  const list = (v) => v.split(',').map((x) => x.trim()).filter(Boolean);
  const fields = {
    versions: h('input', {id: 'rp-versions', type: 'text', placeholder: 'e.g. 3, 4'}),
    images: h('input', {id: 'rp-images', type: 'text', placeholder: 'image uuid or name@version'}),
    servers: h('input', {id: 'rp-servers', type: 'text', placeholder: 'server uuid or hostname'}),
    canary: h('input', {id: 'rp-canary', type: 'number', min: '0', placeholder: 'the services\' update.canary'}),
    rolling: h('input', {id: 'rp-rolling', type: 'number', min: '0', placeholder: 'the services\' update.rolling'}),
    thaw: h('input', {id: 'rp-thaw', type: 'checkbox'}),
  };
  const picks = (st.services || []).filter((s) => !s.agent && !(s.runs && s.runs.service_type)).map((s) =>
      h('label', {class: 'check'}, h('input', {type: 'checkbox', name: 'rp-service', value: s.name}), ` ${s.name}`));
  const reprovision = canReprovision ? h('details', {id: 'reprovision'}, h('summary', {}, 'Reprovision…'),
      h('form', {id: 'reprovision-form', onsubmit: (ev) => {
        ev.preventDefault();
        const body = {kind: 'reprovision',
                      services: [...ev.target.querySelectorAll('input[name=rp-service]:checked')].map((c) => c.value),
                      versions: list(fields.versions.value), images: list(fields.images.value),
                      servers: list(fields.servers.value), thaw: fields.thaw.checked};
        if (fields.canary.value !== '') body.canary = Number(fields.canary.value);
        if (fields.rolling.value !== '') body.rolling = Number(fields.rolling.value);
        const scope = body.services.length ? body.services.join(', ') : 'every service';
        act(() => api('POST', `/v1/projects/${enc(name)}/tasks`, body), `Reprovision of ${scope} queued`);
      }},
      h('fieldset', {}, h('legend', {}, 'Services (none: every service)'), picks),
      [['versions', 'Only instances at versions'], ['images', 'Only instances of images'],
       ['servers', 'Only instances on servers'], ['canary', 'Canary (stop after N for a look)'],
       ['rolling', 'At a time']].map(([k, label]) =>
          h('div', {class: 'field'}, h('label', {for: `rp-${k}`}, label), fields[k])),
      h('label', {for: 'rp-thaw', class: 'check'}, fields.thaw, ' end a freeze of these services first (--thaw)'),
      h('button', {type: 'submit', id: 'reprovision-start'}, 'Start reprovision'))) : null;
  const load = async () => {
    let tasks;
    try {
      tasks = await api('GET', `/v1/projects/${enc(name)}/tasks?finished_limit=50`);
    } catch (e) {
      fill(out, errorBox(e));
      return;
    }
    const rows = (tasks.tasks || []).map((t) => {
      const open = ['queued', 'active', 'terminating'].includes(t.state);
      return h('tr', {'data-task': t.uuid, 'data-kind': t.kind},
          h('td', {title: t.uuid}, t.uuid.slice(0, 8)), h('td', {}, t.kind),
          h('td', {}, (t.services || []).join(', ') || 'all'), h('td', {}, badge('t', t.state)),
          h('td', {}, Number(t.steps_planned) > 0 ? `${t.steps_done}/${t.steps_planned}` : ''),
          h('td', {}, `${t.origin}${t.trigger ? ' (' + t.trigger + ')' : ''}`), h('td', {}, t.actor),
          h('td', {}, when(t.created_at)), h('td', {}, t.error || t.reason || t.paused),
          h('td', {}, open && canPause && t.kind === 'reprovision' && t.state !== 'terminating'
              ? (t.paused
                  ? h('button', {type: 'button', class: 'secondary resume', 'aria-label': `Resume task ${t.uuid.slice(0, 8)}`,
                                 onclick: () => act(() => api('POST', `/v1/tasks/${enc(t.uuid)}:resume`, {}), 'Task resumed')},
                      'Resume')
                  : h('button', {type: 'button', class: 'secondary pause', 'aria-label': `Pause task ${t.uuid.slice(0, 8)}`,
                                 onclick: () => act(() => api('POST', `/v1/tasks/${enc(t.uuid)}:pause`,
                                                              {reason: 'paused in the console'}), 'Task paused')},
                      'Pause'))
              : null,
            open && canCancel && t.state !== 'terminating'
              ? h('button', {type: 'button', class: 'danger cancel', 'aria-label': `Cancel task ${t.uuid.slice(0, 8)}`,
                             onclick: () => act(() => api('POST', `/v1/tasks/${enc(t.uuid)}:terminate`,
                                                          {reason: 'cancelled in the console'}), 'Task cancelled')},
                  t.kind === 'freeze' ? 'End' : 'Cancel')
              : null));
    });
    fill(out, controls, reprovision, page.message,
        table(['Task', 'Kind', 'Scope', 'State', 'Progress', 'Origin', 'Actor', 'Created', 'Note', ''], rows));
  };
  await load();
  live(root, name, load);
}

async function eventsPage(root, name) {
  const filter = h('input', {id: 'event-filter', type: 'search', placeholder: 'kind or text, e.g. task. or mysql'});
  const body = h('tbody', {});
  let events = [];
  const draw = () => {
    const q = filter.value.toLowerCase();
    const shown = events.filter((e) => !q || [e.kind, e.subject, e.detail, e.actor]
        .some((v) => (v || '').toLowerCase().includes(q))).slice(-500).reverse();
    fill(body, ...shown.map((e) => h('tr', {'data-kind': e.kind},
        h('td', {}, e.index), h('td', {}, when(e.time)), h('td', {}, e.kind), h('td', {}, e.actor),
        h('td', {}, e.detail))));
  };
  filter.addEventListener('input', draw);
  render(root, h('h1', {}, name), tabs(name, 'events'),
      h('div', {class: 'field'}, h('label', {for: 'event-filter'}, 'Filter'), filter),
      h('table', {}, h('thead', {}, h('tr', {}, ['#', 'Time', 'Kind', 'Actor', 'Detail']
          .map((t) => h('th', {scope: 'col'}, t)))), body));
  try {
    const r = await api('GET', `/v1/projects/${enc(name)}/events?newest=true&limit=500`);
    events = r.events || [];
  } catch (e) {
    render(root, h('h1', {}, name), tabs(name, 'events'), errorBox(e));
    return;
  }
  draw();
  const after = events.length ? events[events.length - 1].index : 0;
  if (!root.isConnected) return;
  pageCleanup.push(watch(`/v1/projects/${enc(name)}/events:watch?after_index=${after}`, (e) => {
    events.push(e);
    if (events.length > 2000) events = events.slice(-1000);
    draw();
  }));
}

// Lines of `a` and `b` as kept, removed and added (longest common subsequence).
function lineDiff(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  const L = Array.from({length: n + 1}, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; }
    else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) { out.push(['+', y[j]]); j++; }
    else { out.push(['-', x[i]]); i++; }
  }
  return out;
}

async function versionsPage(root, name, params) {
  let list;
  try {
    list = await api('GET', `/v1/projects/${enc(name)}/versions`);
  } catch (e) {
    render(root, h('h1', {}, name), tabs(name, 'versions'), errorBox(e));
    return;
  }
  const versions = (list.versions || []).slice().sort((p, q) => Number(q.number) - Number(p.number));
  const pick = (which, v) => h('input', {type: 'radio', name: which, value: v.number, 'aria-label': `${which} v${v.number}`,
                                         checked: params.get(which) === String(v.number)});
  const rows = versions.map((v) => h('tr', {'data-version': v.number},
      h('td', {}, pick('a', v)), h('td', {}, pick('b', v)),
      h('td', {}, h('a', {href: `#/p/${enc(name)}/versions?show=${v.number}`}, `v${v.number}`)),
      h('td', {}, when(v.created_at)), h('td', {}, v.author), h('td', {}, (v.tags || []).join(', ')),
      h('td', {}, v.origin), h('td', {}, v.message)));
  const form = h('form', {onsubmit: (ev) => {
    ev.preventDefault();
    const fd = new FormData(form);
    location.hash = `#/p/${enc(name)}/versions?a=${fd.get('a') || ''}&b=${fd.get('b') || ''}`;
  }}, table(['A', 'B', 'Version', 'Created', 'Author', 'Tags', 'Origin', 'Message'], rows),
  h('button', {type: 'submit', id: 'compare'}, 'Compare A with B'));
  const get = (n) => api('GET', `/v1/projects/${enc(name)}/versions/${enc(n)}?include_manifest=true`);
  let detail = null;
  try {
    if (params.get('show')) {
      const v = await get(params.get('show'));
      detail = [h('h2', {}, `Manifest of v${v.version.number}`), h('pre', {id: 'manifest'}, v.version.manifest)];
    } else if (params.get('a') && params.get('b')) {
      const [a, b, fields] = await Promise.all([
        get(params.get('a')), get(params.get('b')),
        api('GET', `/v1/projects/${enc(name)}/versions/${enc(params.get('b'))}?diff_from=${enc(params.get('a'))}`)]);
      const lines = lineDiff(a.version.manifest, b.version.manifest);
      // By field, as mariposad compares them (the plan of an apply); the
      // text's lines below.
      detail = [h('h2', {}, `v${a.version.number} → v${b.version.number}`),
                h('div', {id: 'field-diff'}, diffView({diff: fields.diff || {}}, 'The two versions are the same.')),
                h('details', {open: true}, h('summary', {}, 'The manifests\' text, line by line'),
                  h('pre', {class: 'diff', id: 'diff'}, lines.map(([k, t]) =>
                      h('div', {class: k === '+' ? 'add' : k === '-' ? 'del' : ''}, `${k} ${t}`))))];
    }
  } catch (e) {
    detail = errorBox(e);
  }
  render(root, h('h1', {}, name), tabs(name, 'versions'), form, detail);
}

function diffView(resp, same) {
  const d = resp.diff || {};
  const rows = (d.services || []).filter((s) => s.action !== 'UNCHANGED').map((s) => h('tr', {},
      h('td', {}, s.service), h('td', {}, s.action.toLowerCase()),
      h('td', {}, `${s.from_count} → ${s.to_count}`),
      h('td', {}, (s.fields || []).map((f) => h('div', {}, `${f.path}: ${f.from} → ${f.to}`)),
        Number(s.instances_replaced) > 0 ? h('div', {}, `${s.instances_replaced} instances replaced`) : null)));
  return h('div', {id: 'plan-diff'},
      d.empty ? h('p', {}, same || 'No change: the manifest is the version in force.')
              : table(['Service', 'Change', 'Count', 'Fields'], rows),
      (d.project_fields || []).map((f) => h('div', {}, `${f.path}: ${f.from} → ${f.to}`)),
      (resp.warnings || []).map((w) => h('div', {class: 'notice'}, 'Warning: ', w)));
}

// A dry run's errors at their lines: the list (each moves the editor's
// caret to its place) and the manifest with each error under its line.
// Errors read "FILE:LINE:COL: path: why" (docs/manifest.md).
function locatedErrors(editor, message) {
  const found = [...String(message || '').matchAll(/^[^\n:]*:(\d+):(\d+): (.*)$/gm)]
      .map((m) => ({line: Number(m[1]), col: Number(m[2]), why: m[3]}));
  if (!found.length) return null;
  const lines = editor.value.split('\n');
  const jump = (f) => {
    let at = 0;
    for (let i = 0; i < f.line - 1 && i < lines.length; i++) at += lines[i].length + 1;
    const end = at + (lines[f.line - 1] || '').length;
    editor.focus();
    editor.setSelectionRange(at + Math.max(0, f.col - 1), end);
    editor.scrollTop = Math.max(0, (f.line - 4) * 18);
    say(`Line ${f.line}: ${f.why}`);
  };
  const at = (n) => found.filter((f) => f.line === n);
  return h('div', {id: 'located'},
      h('h2', {}, `${found.length} error${found.length === 1 ? '' : 's'} at their lines`),
      h('ol', {id: 'manifest-errors'}, found.map((f) => h('li', {},
          h('button', {type: 'button', class: 'link', onclick: () => jump(f)}, `Line ${f.line}, column ${f.col}`),
          `: ${f.why}`))),
      h('pre', {id: 'annotated', class: 'annotated', tabindex: '0', 'aria-label': 'The manifest with its errors under their lines'},
        lines.map((t, i) => [
          h('div', {class: at(i + 1).length ? 'bad-line' : ''}, h('span', {class: 'ln'}, String(i + 1).padStart(4)), ' ', t),
          at(i + 1).map((f) => h('div', {class: 'line-error'}, `${' '.repeat(4 + f.col)}^ ${f.why}`))])));
}

async function applyPage(root, name) {
  const project = h('input', {id: 'apply-project', type: 'text', value: name || '', required: true});
  const text = h('textarea', {id: 'manifest', rows: '18', cols: '90', spellcheck: 'false'});
  const file = h('input', {id: 'manifest-file', type: 'file', accept: '.yaml,.yml,.json,text/*'});
  const out = h('div', {id: 'apply-result'});
  const applyBtn = h('button', {type: 'button', id: 'apply', disabled: true}, 'Apply');
  let base = null;  // the version the plan was made against (--previous)
  file.addEventListener('change', async () => {
    if (file.files[0]) text.value = await file.files[0].text();
    guess();
  });
  let typed = Boolean(name);  // the project field was set by hand (or is this page's)
  project.addEventListener('input', () => { typed = true; });
  const guess = () => {
    const m = /^project:\s*([a-z0-9-]+)/m.exec(text.value);
    if (m && !typed) project.value = m[1];
    applyBtn.disabled = true;  // plan again first
  };
  text.addEventListener('input', guess);
  const plan = async () => {
    try {
      const r = await api('POST', `/v1/projects/${enc(project.value)}:apply`, {manifest: text.value, dry_run: true});
      base = r.base_version;
      fill(out, h('h2', {}, `Plan against ${base ? 'v' + r.base_version_number : 'a new project'}`),
                          diffView(r));
      applyBtn.disabled = !r.changed;
    } catch (e) {
      fill(out, errorBox(e), locatedErrors(text, e instanceof ApiError ? (e.info.error || e.info.message) : ''));
    }
  };
  applyBtn.addEventListener('click', async () => {
    try {
      // Refused if another version was applied since the plan.
      const r = await api('POST', `/v1/projects/${enc(project.value)}:apply`,
                          {manifest: text.value, previous_version: base || '', force: false});
      applyBtn.disabled = true;
      const where = `#/p/${enc(r.project || project.value)}`;
      fill(out, h('div', {class: 'notice', role: 'status', id: 'applied'},
          `Applied as version ${r.version.number}. `, r.rollout_task ? `Rollout task ${r.rollout_task.slice(0, 8)}. ` : '',
          h('a', {href: where}, 'Watch it converge')));
      say(`Applied as version ${r.version.number}`);
    } catch (e) {
      fill(out, errorBox(e));
    }
  });
  render(root, h('h1', {}, name ? `${name}: apply` : 'Apply a manifest'), name ? tabs(name, 'apply') : null,
      h('div', {class: 'field'}, h('label', {for: 'apply-project'}, 'Project'), project),
      h('div', {class: 'field'}, h('label', {for: 'manifest-file'}, 'Upload a manifest'), file),
      h('div', {class: 'field', style: 'max-width: none'}, h('label', {for: 'manifest'}, 'Manifest (YAML)'), text),
      h('div', {class: 'row'}, h('button', {type: 'button', id: 'plan', class: 'secondary', onclick: plan}, 'Plan'),
        applyBtn),
      out);
  if (name) {
    try {
      const v = await api('GET', `/v1/projects/${enc(name)}/versions/current?include_manifest=true`);
      if (!text.value) text.value = v.version.manifest;
    } catch (e) { /* a new project */ }
  }
}

// A project's meta: values, secrets (never shown back: set or replaced
// only), where each comes from; set and delete (docs/manifest.md, "meta").
async function metaPage(root, name) {
  const out = h('div', {id: 'meta'});
  render(root, h('h1', {}, name), tabs(name, 'meta'), out);
  const [canSet, canDelete] = await Promise.all([allowed('Projects/SetMeta', name), allowed('Projects/DeleteMeta', name)]);
  const page = {message: null};
  const key = h('input', {id: 'meta-key', type: 'text', required: true, autocomplete: 'off'});
  const value = h('input', {id: 'meta-value', type: 'text', autocomplete: 'off'});
  const secret = h('input', {id: 'meta-secret', type: 'checkbox'});
  secret.addEventListener('change', () => { value.type = secret.checked ? 'password' : 'text'; });
  const act = actor(page, () => load());
  const form = canSet ? h('form', {id: 'meta-form', class: 'row', onsubmit: (ev) => {
    ev.preventDefault();
    const k = key.value.trim(), v = value.value, sec = secret.checked;
    act(async () => {
      await api('PUT', `/v1/projects/${enc(name)}/meta/${enc(k)}`, {value: v, secret: sec});
      value.value = '';  // a secret does not stay in the page
    }, `${k} set${sec ? ' (secret)' : ''}`);
  }}, h('label', {for: 'meta-key'}, 'Key'), key, h('label', {for: 'meta-value'}, 'Value'), value,
  h('label', {for: 'meta-secret', class: 'check'}, secret, ' secret (sealed; never shown again)'),
  h('button', {type: 'submit', id: 'meta-set'}, 'Set')) : null;
  const load = async () => {
    let r;
    try {
      r = await api('GET', `/v1/projects/${enc(name)}/meta`);
    } catch (e) {
      fill(out, errorBox(e));
      return;
    }
    const rows = (r.entries || []).map((m) => h('tr', {'data-key': m.key},
        h('td', {}, m.key), h('td', {}, m.secret ? h('span', {class: 'muted'}, 'secret (not shown)') : m.value),
        h('td', {}, m.source), h('td', {}, when(m.updated_at)),
        h('td', {}, canDelete && m.source === 'store'
            ? h('button', {type: 'button', class: 'danger meta-delete', 'aria-label': `Delete ${m.key}`,
                           onclick: () => act(() => api('DELETE', `/v1/projects/${enc(name)}/meta/${enc(m.key)}`),
                                              `${m.key} deleted`)}, 'Delete')
            : null)));
    fill(out, form, page.message,
        rows.length ? table(['Key', 'Value', 'From', 'Updated', ''], rows) : h('p', {id: 'no-meta'}, 'No meta.'),
        canSet ? null : h('p', {class: 'muted'}, 'Your role may look, not change.'));
  };
  await load();
}

// Tokens (admin): who holds one, its role and scope; make one (its secret is
// shown once, here), revoke one.
async function tokensPage(root) {
  const out = h('div', {id: 'tokens'});
  render(root, h('h1', {}, 'Tokens'), out);
  const page = {message: null};
  const act = actor(page, () => load());
  const field = (id, label, el) => h('div', {class: 'field'}, h('label', {for: id}, label), el);
  const tname = h('input', {id: 'token-name', type: 'text', required: true, autocomplete: 'off'});
  const role = h('select', {id: 'token-role'}, ['viewer', 'deployer', 'operator', 'admin', 'health-agent']
      .map((r) => h('option', {value: r}, r)));
  const project = h('input', {id: 'token-project', type: 'text', placeholder: 'empty: every project'});
  const hours = h('input', {id: 'token-hours', type: 'number', min: '0', value: '0'});
  const form = h('form', {id: 'token-form', onsubmit: async (ev) => {
    ev.preventDefault();
    try {
      const r = await api('POST', '/v1/auth/tokens', {name: tname.value.trim(), role: role.value,
                                                       project: project.value.trim(),
                                                       expires_in_seconds: String(Number(hours.value || 0) * 3600)});
      // The secret, once: copy it now; only its hash is kept.
      page.message = h('div', {class: 'notice', role: 'status', id: 'token-made'},
          `Token ${r.token.name} made. Its secret is shown this once: `,
          h('code', {id: 'token-secret'}, r.secret));
      say(`Token ${r.token.name} made`);
      tname.value = '';
    } catch (e) {
      page.message = errorBox(e);
    }
    load();
  }}, field('token-name', 'Name', tname), field('token-role', 'Role', role),
  field('token-project', 'Project', project), field('token-hours', 'Expires in hours (0: never)', hours),
  h('button', {type: 'submit', id: 'token-create'}, 'Make token'));
  const load = async () => {
    let r;
    try {
      r = await api('GET', '/v1/auth/tokens');
    } catch (e) {
      fill(out, errorBox(e));
      return;
    }
    const rows = (r.tokens || []).map((t) => h('tr', {'data-token': t.name},
        h('td', {}, t.name), h('td', {}, t.role), h('td', {}, t.project || 'every project'),
        h('td', {}, when(t.created_at)), h('td', {}, t.expires_at ? when(t.expires_at) : 'never'),
        h('td', {}, t.last_used_at ? when(t.last_used_at) : '-'), h('td', {}, t.revoked ? 'revoked' : 'active'),
        h('td', {}, t.revoked ? null : h('button', {type: 'button', class: 'danger token-revoke',
            'aria-label': `Revoke ${t.name}`,
            onclick: () => act(() => api('DELETE', `/v1/auth/tokens/${enc(t.id)}`), `${t.name} revoked`)}, 'Revoke'))));
    fill(out, page.message, form, h('h2', {}, 'Tokens'),
        table(['Name', 'Role', 'Project', 'Created', 'Expires', 'Last used', 'State', ''], rows));
  };
  await load();
}

// ---- routing -----------------------------------------------------------------

function sessionBar() {
  const nav = document.getElementById('session');
  if (!session.who) {
    fill(nav);
    return;
  }
  const roles = (session.who.grants || []).map((g) => `${g.role}${g.project ? ' on ' + g.project : ''}`).join(', ');
  const admin = (session.who.grants || []).some((g) => g.role === 'admin' && !g.project);
  fill(nav, admin ? h('a', {href: '#/tokens', id: 'tokens-link'}, 'Tokens') : null,
      h('span', {id: 'whoami'}, `${session.who.name} (${roles || 'no role'})`),
      h('button', {type: 'button', class: 'secondary', id: 'logout', style: 'color: #0b57a4', onclick: () => {
        session.token = '';
        session.who = null;
        sessionStorage.removeItem('mariposa.token');
        location.hash = '#/login';
      }}, 'Log out'));
}

async function route() {
  for (const stop of pageCleanup) stop();
  pageCleanup = [];
  const [path, query] = (location.hash.slice(1) || '/').split('?');
  const params = new URLSearchParams(query || '');
  const root = h('div', {class: 'page'});
  fill(document.getElementById('main'), root);
  if (!session.token || path === '/login') {
    session.who = null;
    sessionBar();
    return loginPage(root);
  }
  try {
    if (!session.who) session.who = await api('GET', '/v1/auth/whoami');
    sessionBar();
    const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts.length === 0) return await projectsPage(root);
    if (parts[0] === 'apply') return await applyPage(root, '');
    if (parts[0] === 'tokens') return await tokensPage(root);
    if (parts[0] === 'p' && parts[1]) {
      const name = parts[1];
      switch (parts[2] || 'overview') {
        case 'overview': return await overviewPage(root, name);
        case 'instances': return await instancesPage(root, name, parts[3] || '');
        case 'queue': return await queuePage(root, name);
        case 'events': return await eventsPage(root, name);
        case 'versions': return await versionsPage(root, name, params);
        case 'meta': return await metaPage(root, name);
        case 'datacenters': return await dataCentersPage(root, name);
        case 'apply': return await applyPage(root, name);
      }
    }
    render(root, h('h1', {}, 'Not found'), h('p', {}, h('a', {href: '#/'}, 'Projects')));
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return loginPage(root, e);
    render(root, errorBox(e));
  }
}

// The project in every data center (GET /v1/projects/NAME/datacenters:
// each asked now by this mariposad) and its rollouts across them
// (docs/operations.md, "Several data centers").
async function dataCentersPage(root, name) {
  const out = h('div', {id: 'datacenters'}, h('p', {class: 'muted'}, 'Loading…'));
  render(root, h('h1', {}, name), tabs(name, 'datacenters'), out);
  const load = async () => {
    let across, rollouts;
    try {
      [across, rollouts] = await Promise.all([
        api('GET', `/v1/projects/${enc(name)}/datacenters`),
        api('GET', `/v1/projects/${enc(name)}/rollouts?all=true`)]);
    } catch (e) {
      fill(out, errorBox(e));
      return;
    }
    const rows = (across.datacenters || []).map((d) => {
      const st = d.state || {};
      const state = !d.answered ? 'unknown' : !d.present ? 'not there'
          : st.converged ? 'converged' : 'not converged';
      const services = (st.services || []).map((s) => `${s.name} ${s.verdict} ${s.ready || 0}/${s.desired || 0}`)
          .join(', ');
      return h('tr', {'data-datacenter': d.datacenter},
          h('td', {}, d.datacenter + (d.local ? ' (this one)' : '')),
          h('td', {}, d.present ? `${st.version || 0} (${(st.version_uuid || '').slice(0, 8)})` : '-'),
          h('td', {}, h('span', {'data-state': state}, state)),
          h('td', {}, d.answered ? services : (d.error || '')));
    });
    const steps = (rollouts.rollouts || []).slice(-5).reverse().map((r) => h('section', {class: 'rollout'},
        h('h3', {}, `Rollout ${r.uuid.slice(0, 8)}: ${r.state}`),
        h('p', {}, r.message || ''),
        table(['Data center', 'State', 'Version there', 'Last said'],
              (r.steps || []).map((s) => h('tr', {'data-step': s.datacenter},
                  h('td', {}, s.datacenter + (s.canary ? ' (canary)' : '')), h('td', {}, s.state),
                  h('td', {}, String(s.number || '-')), h('td', {}, s.detail || ''))))));
    fill(out,
        h('p', {id: 'across-summary', role: 'status'}, across.summary || ''),
        table(['Data center', 'Version', 'State', 'Services'], rows),
        h('h2', {}, 'Rollouts across data centers'),
        steps.length ? steps : h('p', {class: 'muted', id: 'no-rollouts'}, 'None from this data center.'));
  };
  await load();
  live(root, name, load);
}

window.addEventListener('hashchange', route);
route();
