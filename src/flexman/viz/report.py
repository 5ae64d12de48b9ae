"""One self-contained HTML report of a simulation: model, frequencies, equations, plots and a 3D
animation of the deforming arm.

Offline by construction: Plotly's JavaScript bundle (from the ``plotly`` Python package) is
inlined, equations are MathML (rendered by the browser itself), data sit in JSON script
blocks; the page loads nothing from the network. The animation is driven by a small script of
ours (play/pause, frame steps, a scrubber, the time readout) that restyles the 3D traces, so
it can be stepped and tested frame by frame (``window.flexmanAnimation``). A URDF robot's
meshes (:mod:`.meshes`) are posed and bent by the page itself from per-frame link poses and modal
coordinates (``window.flexmanScene`` reads them back).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np

from . import series, summary
from .animation import MAX_FRAMES, animation_data
from .equations import eom_html
from .meshes import MAX_TRIANGLES, mesh_scene

MAX_PLOT_POINTS = 4000  # per curve: long runs are drawn from the envelope of their samples
COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf"]

CSS = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 1em 3em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th { background: #f4f4f4; } caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
table.program td { border: none; padding: 0.05em 0.3em; text-align: left; }
#arm3d { width: 100%; height: 620px; }
.controls { display: flex; align-items: center; gap: 0.6em; flex-wrap: wrap; margin: 0.4em 0; }
.controls button { font-size: 1em; min-width: 2.6em; padding: 0.2em 0.6em; }
#scrub { flex: 1; min-width: 200px; }
#time-readout { font-family: monospace; font-size: 1.1em; min-width: 9em; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); gap: 0.5em; }
.plot { height: 300px; }
.arms3 { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 0.4em; }
.arms3 figure { margin: 0; } .arms3 figcaption { font-weight: bold; text-align: center; }
.arm-small { width: 100%; height: 440px; }
#cmp-scrub { flex: 1; min-width: 200px; }
#cmp-time { font-family: monospace; font-size: 1.1em; min-width: 9em; }
pre { background: #f7f7f7; padding: 0.6em; max-height: 40em; overflow: auto; font-size: 0.85em; }
.muted { color: #666; }
"""

MESH_JS = r"""
function meshScene(M) {  // the URDF meshes (flexman/viz/meshes.py): decoded once, posed and bent per frame
  if (!M) return {traces: () => [], points: () => [], summary: () => ({triangles: 0, visuals: []})};
  function decode(text, Type) {
    const bin = atob(text), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Type(bytes.buffer);
  }
  const S = M.slots.length, C = M.n_coords;
  const poses = decode(M.poses, Float32Array), coords = decode(M.coords, Float32Array);
  const truePoses = M.true_poses ? decode(M.true_poses, Float32Array) : poses;
  const trueCoords = M.true_coords ? decode(M.true_coords, Float32Array) : coords;
  const parts = M.visuals.map(v => ({v: v, local: decode(v.vertices, Float32Array),
    faces: decode(v.faces, v.index === 'u32' ? Uint32Array : Uint16Array),
    modes: v.modes ? decode(v.modes, Float32Array) : null}));
  function place(part, f, trueScale) {  // x = R (v + sum_k p_k Psi_k(v)) + t
    const P = trueScale ? truePoses : poses, Q = trueScale ? trueCoords : coords;
    const o = (f * S + part.v.slot) * 12, V = part.local.length / 3, n = part.v.n;
    const out = [new Array(V), new Array(V), new Array(V)];
    for (let i = 0; i < V; i++) {
      let a = part.local[3 * i], b = part.local[3 * i + 1], c = part.local[3 * i + 2];
      for (let k = 0; k < n; k++) {
        const p = Q[f * C + part.v.flex + k], m = 3 * (k * V + i);
        a += p * part.modes[m]; b += p * part.modes[m + 1]; c += p * part.modes[m + 2];
      }
      for (let r = 0; r < 3; r++)
        out[r][i] = P[o + 4 * r] * a + P[o + 4 * r + 1] * b + P[o + 4 * r + 2] * c + P[o + 4 * r + 3];
    }
    return out;
  }
  function traces(f, trueScale) {
    return parts.map((part, k) => {
      const xyz = place(part, f, trueScale), F = part.faces;
      const idx = [0, 1, 2].map(r => Array.from({length: F.length / 3}, (_, j) => F[3 * j + r]));
      return {type: 'mesh3d', x: xyz[0], y: xyz[1], z: xyz[2], i: idx[0], j: idx[1], k: idx[2],
              color: part.v.colour, flatshading: true, hoverinfo: 'skip', name: 'meshes',
              legendgroup: 'meshes', showlegend: k === 0, lighting: {ambient: 0.55, diffuse: 0.7, specular: 0.1}};
    });
  }
  return {
    traces: traces,
    points: (f, trueScale) => parts.map(part => place(part, f, trueScale)),
    summary: (gd, first) => ({  // read back from the drawn traces (tests, and anyone curious)
      triangles: M.triangles,
      visuals: parts.map((part, k) => ({name: part.v.name, slot: part.v.slot, link: M.slots[part.v.slot],
                                        flexible: part.v.flex >= 0, vertices: part.local.length / 3,
                                        triangles: part.faces.length / 3, trace: first + k})),
      positions: k => { const d = gd.data[first + k]; return [Array.from(d.x), Array.from(d.y), Array.from(d.z)]; },
      local: k => Array.from(parts[k].local),
    }),
  };
}
"""

ANIMATION_JS = r"""
(function () {
  const A = JSON.parse(document.getElementById('animation-data').textContent);
  const gd = document.getElementById('arm3d');
  const PARTS = ['ghost_rigid', 'ghost_beams', 'rigid', 'beams', 'joints', 'tip']
    .concat(A.frame_names.length ? ['frame_x', 'frame_y', 'frame_z', 'named'] : []);
  const STYLE = {
    ghost_rigid: {mode: 'lines', line: {color: '#bbbbbb', width: 3}, name: 'undeformed'},
    ghost_beams: {mode: 'lines', line: {color: '#bbbbbb', width: 3}, name: 'undeformed beams', showlegend: false},
    rigid: {mode: 'lines', line: {color: '#444444', width: 9}, name: 'rigid links'},
    beams: {mode: 'lines', line: {color: '#ff7f0e', width: 7}, name: 'beams (deflection x' + A.magnify + ')'},
    joints: {mode: 'markers', marker: {color: '#1f77b4', size: 5}, name: 'joints'},
    tip: {mode: 'markers', marker: {color: '#d62728', size: 6}, name: 'end-effector'},
    frame_x: {mode: 'lines', line: {color: '#e41a1c', width: 4}, name: 'named frames: x, y, z axes', legendgroup: 'nf'},
    frame_y: {mode: 'lines', line: {color: '#4daf4a', width: 4}, showlegend: false, legendgroup: 'nf'},
    frame_z: {mode: 'lines', line: {color: '#377eb8', width: 4}, showlegend: false, legendgroup: 'nf'},
    named: {mode: 'markers+text', marker: {color: '#222222', size: 3}, text: A.frame_names,
            textposition: 'top center', textfont: {size: 10}, showlegend: false, legendgroup: 'nf'},
  };
  const n = A.frames.length;
  const slider = document.getElementById('scrub');
  const readout = document.getElementById('time-readout');
  const button = document.getElementById('play');
  const plots = Array.from(document.querySelectorAll('.plot:not(.cmp)'));
  slider.max = n - 1;
  let frame = 0, playing = false, startWall = 0, startSim = 0, lastCursor = 0;
  const tEnd = A.frames[n - 1].t;

  const MESH = meshScene(A.meshes);
  function traces(f) {
    return PARTS.map(p => Object.assign({type: 'scatter3d', x: f[p][0], y: f[p][1], z: f[p][2],
                                         hoverinfo: 'skip'}, STYLE[p])).concat(MESH.traces(0, false));
  }
  const r = A.range;
  const layout = {
    margin: {l: 0, r: 0, t: 10, b: 0}, showlegend: true, legend: {x: 0, y: 1},
    scene: {aspectmode: 'cube', xaxis: {range: r[0], title: {text: 'x [m]'}},
            yaxis: {range: r[1], title: {text: 'y [m]'}}, zaxis: {range: r[2], title: {text: 'z [m]'}},
            camera: {eye: {x: 1.4, y: -1.4, z: 0.9}}},
    uirevision: 'keep',
  };
  function moveCursors(t) {
    plots.forEach(p => { if (p.layout) Plotly.relayout(p, {'shapes[0].x0': t, 'shapes[0].x1': t}); });
  }
  const scale = document.getElementById('scale');
  function source(p) {  // the true-scale parts when the scale switch says so
    return (scale && scale.value === '1' && !p.startsWith('ghost') && ('true_' + p) in A.frames[0]) ? 'true_' + p : p;
  }
  function show(i, cursors) {
    frame = Math.max(0, Math.min(n - 1, Math.round(i)));
    const f = A.frames[frame];
    const s = PARTS.map(source);
    const m = MESH.points(frame, scale && scale.value === '1');
    Plotly.restyle(gd, {x: s.map(p => f[p][0]).concat(m.map(v => v[0])), y: s.map(p => f[p][1]).concat(m.map(v => v[1])),
                        z: s.map(p => f[p][2]).concat(m.map(v => v[2]))},
                   PARTS.map((_, k) => k).concat(m.map((_, k) => PARTS.length + k)));
    slider.value = frame;
    readout.textContent = 't = ' + f.t.toFixed(3) + ' s';
    gd.dataset.frame = frame;
    if (cursors !== false) moveCursors(f.t);
  }
  function tick(now) {
    if (!playing) return;
    const t = startSim + (now - startWall) / 1000 * parseFloat(document.getElementById('speed').value);
    let i = frame;
    while (i < n - 1 && A.frames[i + 1].t <= t) i++;
    if (i !== frame) {
      const cursors = now - lastCursor > 250;
      if (cursors) lastCursor = now;
      show(i, cursors);
    }
    if (frame >= n - 1) { pause(); return; }
    requestAnimationFrame(tick);
  }
  function play() {
    if (frame >= n - 1) show(0, false);
    playing = true; button.textContent = 'Pause';
    startWall = performance.now(); startSim = A.frames[frame].t;
    requestAnimationFrame(tick);
  }
  function pause() { playing = false; button.textContent = 'Play'; moveCursors(A.frames[frame].t); }
  button.addEventListener('click', () => playing ? pause() : play());
  document.getElementById('back').addEventListener('click', () => { pause(); show(frame - 1); });
  document.getElementById('forward').addEventListener('click', () => { pause(); show(frame + 1); });
  slider.addEventListener('input', () => { pause(); show(parseInt(slider.value)); });
  if (scale) scale.addEventListener('change', () => {
    Plotly.restyle(gd, {name: 'beams (deflection x' + (scale.value === '1' ? 1 : A.magnify) + ')'}, [3]);
    show(frame, false);
  });
  Plotly.newPlot(gd, traces(A.frames[0]), layout, {responsive: true, displaylogo: false}).then(() => {
    show(0);
    window.flexmanAnimation = {show: show, play: play, pause: pause, get frame() { return frame; },
                               get playing() { return playing; }, frames: n, times: A.frames.map(f => f.t)};
    window.flexmanScene = MESH.summary(gd, PARTS.length);
  });
  plots.forEach(p => p.on && p.on('plotly_click', ev => {
    const t = ev.points[0].x; let i = 0;
    while (i < n - 1 && A.frames[i + 1].t <= t) i++;
    pause(); show(i);
  }));
})();
"""


COMPARISON_JS = r"""
(function () {
  const C = JSON.parse(document.getElementById('comparison-animation').textContent);
  const PARTS = ['ghost_rigid', 'ghost_beams', 'rigid', 'beams', 'joints', 'tip', 'trail'];
  const views = C.runs.map((_, k) => document.getElementById('cmp-arm-' + k));
  const n = C.times.length;
  const slider = document.getElementById('cmp-scrub');
  const readout = document.getElementById('cmp-time');
  const button = document.getElementById('cmp-play');
  const curve = document.getElementById('plot-comparison');
  slider.max = n - 1;
  let frame = 0, playing = false, startWall = 0, startSim = 0, lastCursor = 0, syncing = false;

  function style(run) {
    return {
      ghost_rigid: {mode: 'lines', line: {color: '#cccccc', width: 3}},
      ghost_beams: {mode: 'lines', line: {color: '#cccccc', width: 3}},
      rigid: {mode: 'lines', line: {color: '#444444', width: 8}},
      beams: {mode: 'lines', line: {color: run.colour, width: 7}},
      joints: {mode: 'markers', marker: {color: '#444444', size: 4}},
      tip: {mode: 'markers', marker: {color: run.colour, size: 6, line: {color: '#000', width: 1}}},
      trail: {mode: 'lines', line: {color: run.colour, width: 2, dash: 'dot'}},
    };
  }
  function part(run, i, p) {  // the trail: the end-effector's path up to frame i
    if (p !== 'trail') return run.frames[i][p];
    return [0, 1, 2].map(a => run.trail[a].slice(0, i + 1));
  }
  const MESHES = C.runs.map(run => meshScene(run.meshes));
  function traces(run, i) {
    const st = style(run);
    return PARTS.map(p => { const v = part(run, i, p);
      return Object.assign({type: 'scatter3d', x: v[0], y: v[1], z: v[2], hoverinfo: 'skip', name: p,
                            showlegend: false}, st[p]); }).concat(MESHES[C.runs.indexOf(run)].traces(i, false));
  }
  const r = C.range;
  const layout = {
    margin: {l: 0, r: 0, t: 0, b: 0}, showlegend: false,
    scene: {aspectmode: 'cube', xaxis: {range: r[0], title: {text: 'x [m]'}},
            yaxis: {range: r[1], title: {text: 'y [m]'}}, zaxis: {range: r[2], title: {text: 'z [m]'}},
            camera: {eye: {x: 1.4, y: -1.4, z: 0.9}}},
    uirevision: 'keep',
  };
  function moveCursor(t) {
    if (curve && curve.layout) Plotly.relayout(curve, {'shapes[0].x0': t, 'shapes[0].x1': t});
  }
  function show(i, cursor) {
    frame = Math.max(0, Math.min(n - 1, Math.round(i)));
    C.runs.forEach((run, k) => {
      const v = PARTS.map(p => part(run, frame, p)).concat(MESHES[k].points(frame, false));
      Plotly.restyle(views[k], {x: v.map(a => a[0]), y: v.map(a => a[1]), z: v.map(a => a[2])},
                     v.map((_, j) => j));
    });
    slider.value = frame;
    readout.textContent = 't = ' + C.times[frame].toFixed(3) + ' s';
    if (cursor !== false) moveCursor(C.times[frame]);
  }
  function tick(now) {
    if (!playing) return;
    const t = startSim + (now - startWall) / 1000 * parseFloat(document.getElementById('cmp-speed').value);
    let i = frame;
    while (i < n - 1 && C.times[i + 1] <= t) i++;
    if (i !== frame) {
      const cursor = now - lastCursor > 250;
      if (cursor) lastCursor = now;
      show(i, cursor);
    }
    if (frame >= n - 1) { pause(); return; }
    requestAnimationFrame(tick);
  }
  function play() {
    if (frame >= n - 1) show(0, false);
    playing = true; button.textContent = 'Pause';
    startWall = performance.now(); startSim = C.times[frame];
    requestAnimationFrame(tick);
  }
  function pause() { playing = false; button.textContent = 'Play'; moveCursor(C.times[frame]); }
  button.addEventListener('click', () => playing ? pause() : play());
  document.getElementById('cmp-back').addEventListener('click', () => { pause(); show(frame - 1); });
  document.getElementById('cmp-forward').addEventListener('click', () => { pause(); show(frame + 1); });
  slider.addEventListener('input', () => { pause(); show(parseInt(slider.value)); });
  function syncCameras(source) {  // turning one view turns the others
    return ev => {
      if (syncing || !ev || !ev['scene.camera']) return;
      syncing = true;
      Promise.all(views.filter(v => v !== source).map(v => Plotly.relayout(v, {'scene.camera': ev['scene.camera']})))
        .finally(() => { syncing = false; });
    };
  }
  Promise.all(C.runs.map((run, k) => Plotly.newPlot(views[k], traces(run, 0), layout,
                                                      {responsive: true, displaylogo: false}))).then(() => {
    views.forEach(v => v.on('plotly_relayout', syncCameras(v)));
    show(0);
    window.flexmanComparison = {show: show, play: play, pause: pause, get frame() { return frame; },
                                get playing() { return playing; }, frames: n, times: C.times,
                                runs: C.runs.map(run => run.name),
                                meshes: k => MESHES[k].summary(views[k], PARTS.length)};
  });
  if (curve && curve.on) curve.on('plotly_click', ev => {
    const t = ev.points[0].x; let i = 0;
    while (i < n - 1 && C.times[i + 1] <= t) i++;
    pause(); show(i);
  });
})();
"""


def comparison_animation(robot, motions, magnify=None, max_frames=MAX_FRAMES) -> dict:
    """The data of the side-by-side animation of the same move made several ways: ``motions``
    {name: (t, q)}. One time axis (the first run's frame times; every other run shows its sample
    nearest each), one magnification (automatic: from the largest deflection of all runs) and one
    cube holding every run, so the views compare. {"times", "magnify", "range", "runs": [{"name",
    "colour", "frames" (as :func:`animation_data`, without the true-scale parts), "trail" (x, y, z
    of the end-effector at every frame)}]}."""
    from .animation import auto_magnification, frame_indices

    items = [(name, np.asarray(t, dtype=float), np.asarray(q, dtype=float).reshape(len(t), -1))
             for name, (t, q) in motions.items()]
    t0 = items[0][1]
    times = t0[frame_indices(len(t0), max_frames)]
    if magnify is None:
        magnify = auto_magnification(robot, np.concatenate([q for _, _, q in items], axis=0))
    runs, lo, hi = [], [], []
    for k, (name, t, q) in enumerate(items):
        idx = np.clip(np.searchsorted(t, times), 1, len(t) - 1) if len(t) > 1 else np.zeros(len(times), int)
        if len(t) > 1:
            idx = np.where(np.abs(t[idx - 1] - times) <= np.abs(t[idx] - times), idx - 1, idx)
        anim = animation_data(robot, times, q[idx], magnify=magnify, max_frames=len(times), meshes=False)
        frames = [{p: v for p, v in f.items() if not p.startswith("true_")} for f in anim["frames"]]
        trail = [[f["tip"][a][0] for f in frames] for a in range(3)]
        run = {"name": name, "colour": COLOURS[k % len(COLOURS)], "frames": frames, "trail": trail}
        scene = mesh_scene(robot, q[idx], magnify, False, max_triangles=MAX_TRIANGLES // len(items))
        if scene is not None:  # the robot's meshes in each view, thinned to share the report's budget
            scene.pop("corners")
            run["meshes"] = scene
        runs.append(run)
        lo.append([a for a, _ in anim["range"]])
        hi.append([b for _, b in anim["range"]])
    lo, hi = np.min(lo, axis=0), np.max(hi, axis=0)
    centre, half = 0.5 * (lo + hi), 0.5 * float((hi - lo).max())
    return {"times": [float(x) for x in times], "magnify": float(magnify), "runs": runs,
            "range": [[float(c - half), float(c + half)] for c in centre]}


def _comparison_views(data) -> str:
    """The controls and the side-by-side 3D views of :func:`comparison_animation`'s ``data``."""
    controls = ("<div class='controls'><button id='cmp-play'>Play</button><button id='cmp-back' title='previous frame'>"
                "&#9664;</button><button id='cmp-forward' title='next frame'>&#9654;</button>"
                "<input id='cmp-scrub' type='range' min='0' max='0' step='1' value='0' aria-label='time'>"
                "<span id='cmp-time'>t = 0 s</span><label>speed <select id='cmp-speed'>"
                "<option value='0.1'>0.1x</option><option value='0.25'>0.25x</option><option value='0.5'>0.5x</option>"
                "<option value='1' selected>1x</option><option value='2'>2x</option></select></label></div>")
    views = "".join(f"<figure><figcaption style='color:{run['colour']}'>{html.escape(run['name'])}</figcaption>"
                    f"<div class='arm-small' id='cmp-arm-{k}'></div></figure>" for k, run in enumerate(data["runs"]))
    return (f"<h3>The arms side by side</h3><p class='muted'>The {len(data['runs'])} runs at the same instant, "
            f"driven by one time slider; deflections drawn {data['magnify']:g} times their size in every view, "
            "the same axes in each; turning one view turns the others. Colours as in the error curves above: the "
            "beams and the end-effector, with its path so far dotted; dark grey: rigid parts; light grey: the same "
            "joints with undeformed links. Click a point of the error curves to jump there.</p>"
            + controls + f"<div class='arms3'>{views}</div>")


def _plotly_js() -> str:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _json_script(element_id: str, data) -> str:
    """Data in a JSON script block (`</` escaped so no string can close the block)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f"<script type='application/json' id='{element_id}'>{text}</script>"


def _clean(values):
    arr = np.asarray(values, dtype=float)
    return [None if not np.isfinite(v) else float(v) for v in np.round(arr, 9)]


def envelope(y, max_points: int = MAX_PLOT_POINTS) -> np.ndarray:
    """Indices of at most about ``max_points`` samples that keep the shape of the series y: the
    smallest and largest value of each of max_points / 2 equal buckets (a plain stride would
    alias a vibration faster than the stride)."""
    n = len(y)
    if n <= max_points:
        return np.arange(n)
    k = -(-n // (max_points // 2))
    pad = np.full(-n % k, np.nan)
    buckets = np.concatenate([np.asarray(y, dtype=float), pad]).reshape(-1, k)
    filled = np.where(np.isnan(buckets), np.inf, buckets)
    low = np.argmin(filled, axis=1)
    high = np.argmax(np.where(np.isnan(buckets), -np.inf, buckets), axis=1)
    idx = np.arange(buckets.shape[0])[:, None] * k + np.sort(np.stack([low, high], axis=1), axis=1)
    return np.unique(np.concatenate([[0], idx.ravel(), [n - 1]]).clip(0, n - 1))


def _trace(t, y, **style) -> dict:
    keep = envelope(y)
    return {"type": "scatter", "mode": "lines", "x": _clean(t[keep]), "y": _clean(y[keep]), **style}


def _panel_figure(panel, t) -> dict:
    """A Plotly figure (plain data) of one panel; shapes[0] is the animation's time cursor."""
    data = []
    t = t if panel.t is None else panel.t
    for k, label in enumerate(panel.labels):
        colour = COLOURS[k % len(COLOURS)]
        if panel.dots:  # readings at their samples over the true value
            data.append(_trace(t, panel.reference[:, k], name=f"{label} {panel.reference_label}",
                               line={"color": "#555", "width": 1.2}))
            data.append({**_trace(t, panel.y[:, k], name=label), "mode": "markers",
                         "marker": {"color": colour, "size": 4}})
            continue
        data.append(_trace(t, panel.y[:, k], name=label, line={"color": colour, "width": 1.6}))
        if panel.reference is not None:
            data.append(_trace(t, panel.reference[:, k], name=f"{label} {panel.reference_label}",
                               line={"color": colour, "width": 1, "dash": "dash"}))
    layout = {"title": {"text": panel.title, "font": {"size": 14}}, "margin": {"l": 60, "r": 10, "t": 36, "b": 40},
              "xaxis": {"title": {"text": "time [s]"}}, "yaxis": {"title": {"text": panel.ylabel}},
              "legend": {"font": {"size": 10}},
              "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": float(t[0]), "x1": float(t[0]),
                          "y0": 0, "y1": 1, "line": {"color": "#999", "width": 1}}]}
    return {"data": data, "layout": layout}


def key_numbers(result, robot, panels=None) -> list:
    """(what, value) rows that summarize a run: largest deflection, tracking errors, energy
    (``panels``: the run's :func:`series.panels`, when already computed)."""
    t = np.asarray(result.t, dtype=float)
    rows = [("simulated time", f"{t[-1]:.4g} s in {len(t)} samples ({result.method})")]
    wall = (result.stats or {}).get("wall_time")
    if wall is not None:
        rows.append(("wall time", f"{float(wall):.3g} s"))
    by_key = {p.key: p for p in (panels if panels is not None else series.panels(result, robot))}
    if "tips" in by_key:
        rows.append(("largest tip deflection", f"{np.nanmax(by_key['tips'].y):.4g} mm"))
        rows.append(("tip deflection at the end", f"{np.nanmax(by_key['tips'].y[-1]):.4g} mm"))
    if "joint_errors" in by_key:
        e = np.abs(by_key["joint_errors"].y)
        rows.append(("largest joint error", f"{np.nanmax(e):.4g} (rad or m)"))
        rows.append(("joint error at the end", f"{np.nanmax(e[-1]):.3g} (rad or m)"))
        ee = by_key["ee_error"].y[:, 0]
        rows.append(("largest end-effector error", f"{np.nanmax(ee):.4g} mm"))
        rows.append(("end-effector error at the end", f"{ee[-1]:.4g} mm"))
    if "estimate_joints" in by_key:
        rows.append(("largest estimation error (joints, motors)",
                     f"{np.nanmax(np.abs(by_key['estimate_joints'].y)):.3g} (rad or m)"))
    energy = np.asarray(result.energy, dtype=float).reshape(len(t), -1).sum(axis=1)

    rows.append(("energy (start -> end)", f"{energy[0]:.6g} -> {energy[-1]:.6g} J"))
    return rows


def _section(title: str, body: str, anchor: str) -> str:
    return f"<section id='{anchor}'><h2>{html.escape(title)}</h2>\n{body}\n</section>"


def comparison_section(comparison, animation=None) -> tuple:
    """(section html, plotly figure) of ``comparison``: {"curves": {name: (t, error in m, end of
    that move in s)}, "pages": {name: relative link to that run's own report}}: the end-effector's
    distance from the rigid arm along each run's own command, for the same move made several ways;
    with ``animation`` (:func:`comparison_animation`) also the arms side by side, synchronised."""
    data, rows = [], []
    for k, (name, (t, err, end)) in enumerate(comparison["curves"].items()):
        t, err = np.asarray(t, dtype=float), np.asarray(err, dtype=float)
        data.append(_trace(t, 1e3 * err, name=name, line={"color": COLOURS[k % len(COLOURS)]}))
        during, after = err[t <= end], err[t >= end + 0.2]
        link = comparison.get("pages", {}).get(name)
        label = f"<a href='{html.escape(link)}'>{html.escape(name)}</a>" if link else html.escape(name)
        rows.append([label, f"{end:.3g}", f"{1e3 * during.max():.4g}" if during.size else "-",
                     f"{1e3 * after.max():.4g}" if after.size else "-"])
    t_first = float(data[0]["x"][0]) if data and data[0]["x"] else 0.0
    figure = {"data": data, "layout": {"margin": {"l": 60, "r": 10, "t": 30, "b": 40},
                                       "title": {"text": "end-effector distance from the rigid arm on its command"},
                                       "xaxis": {"title": {"text": "t [s]"}},
                                       "yaxis": {"title": {"text": "mm"}, "type": "log"},
                                       "shapes": [{"type": "line", "xref": "x", "yref": "paper", "x0": t_first,
                                                   "x1": t_first, "y0": 0, "y1": 1,
                                                   "line": {"color": "#999", "width": 1}}]}}
    head = ("<tr><th>move</th><th>ends at (s)</th><th>largest error during the move (mm)</th>"
            "<th>largest error from 0.2 s after its end (mm)</th></tr>")
    table = "<table>" + head + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows) + "</table>"
    body = ("<p class='muted'>The same move made three ways, each under decoupling + LQR control; the error is the "
            "end-effector's distance from the rigid arm moved along that run's own joint command. Each name links to "
            "that run's own report (all its plots).</p>" + table
            + "<div class='plot cmp' id='plot-comparison'></div>"
            + (_comparison_views(animation) if animation else ""))
    return _section("The same move three ways", body, "comparison"), figure


def report_html(result, robot=None, title=None, magnify=None, equations="auto", note: str = "",
                comparison=None) -> str:
    """The report page as text (see the module docstring). ``equations``: the formulation whose
    symbolic equations are shown ("auto": Newton-Euler for a rigid arm, Book's recursion for a
    flexible one), or None to leave them out; ``magnify``: deflection factor in the
    animation (None: automatic); ``note``: a line under the title (e.g. how the run was driven);
    ``comparison``: the same move made other ways (see :func:`comparison_section`; its optional
    "motions" {name: (t, q)} adds their 3D animations side by side, :func:`comparison_animation`)."""
    robot = robot if robot is not None else getattr(result, "robot", None)
    if robot is None:
        raise ValueError("report: the result carries no robot; pass robot=")
    t = np.asarray(result.t, dtype=float)
    q = np.asarray(result.q, dtype=float).reshape(len(t), -1)
    anim = animation_data(robot, t, q, magnify=magnify)
    panels = series.panels(result, robot)
    title = title or f"flexman report: {robot.name}"
    mag = anim["magnify"]
    controls = ("<div class='controls'><button id='play'>Play</button><button id='back' title='previous frame'>"
                "&#9664;</button><button id='forward' title='next frame'>&#9654;</button>"
                "<input id='scrub' type='range' min='0' max='0' step='1' value='0' aria-label='time'>"
                "<span id='time-readout'>t = 0 s</span><label>speed <select id='speed'>"
                "<option value='0.1'>0.1x</option><option value='0.25'>0.25x</option><option value='0.5'>0.5x</option>"
                "<option value='1' selected>1x</option><option value='2'>2x</option></select></label>"
                + (f"<label>deflections <select id='scale'><option value='{mag:g}' selected>x{mag:g}</option>"
                   "<option value='1'>true scale</option></select></label>" if "true_beams" in anim["frames"][0] else "")
                + "</div>")
    anim_body = (f"<p class='muted'>Deflections drawn {mag:g} times their size unless switched to true scale "
                 f"(largest tip deflection "
                 f"{1e3 * anim['max_tip_deflection']:.3g} mm); grey: the same joints with undeformed links. "
                 + (f"The links carry their visual meshes ({anim['meshes']['triangles']} triangles); a mesh on a "
                    "flexible link bends with its beam. " if "meshes" in anim else "") +
                 f"Click a point of any plot below to jump there.</p>{controls}<div id='arm3d'></div>")
    plot_divs = "".join(f"<div class='plot' id='plot-{p.key}'></div>" for p in panels)
    figures = {p.key: _panel_figure(p, t) for p in panels}
    sections = [
        _section("Arm in motion", anim_body, "animation"),
        _section("Run", summary.table(["quantity", "value"], key_numbers(result, robot, panels)), "run"),
        _section("Time histories", f"<div class='grid'>{plot_divs}</div>", "plots"),
        _section("Model", summary.model_html(robot), "model"),
        _section("Natural frequencies", summary.frequencies_html(robot, q[0]) + summary.convergence_html(robot),
                 "frequencies"),
    ]
    compare_anim = None
    if comparison:
        if comparison.get("motions"):
            compare_anim = comparison_animation(robot, comparison["motions"], magnify=magnify)
        section, figures["comparison"] = comparison_section(comparison, compare_anim)
        sections.insert(0, section)
    if equations:
        from ..symbolic import derive

        if equations == "auto":
            equations = "newton_euler" if robot.is_rigid else "book"
        sections.append(_section("Equations of motion", eom_html(derive(robot, formulation=equations)), "equations"))
    plots_js = ("const F = JSON.parse(document.getElementById('plot-data').textContent);"
                "for (const k in F) Plotly.newPlot('plot-' + k, F[k].data, F[k].layout,"
                " {responsive: true, displaylogo: false});")
    head = (f"<meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{CSS}</style>"
            f"<script>{_plotly_js()}</script>")
    lead = f"<p class='muted'>{html.escape(note)}</p>" if note else ""
    if getattr(result, "diverged", False):  # a partial run is never summarised as a whole one
        t_div = getattr(result, "t_diverged", None)
        when = f" at t = {t_div:.6g} s" if t_div is not None else ""
        lead += (f"<p class='warning'><strong>The run diverged{when}</strong>: everything below shows the "
                 "samples before it; use a smaller step or a stiff method.</p>")
    body = (f"<h1>{html.escape(title)}</h1>{lead}" + "\n".join(sections)
            + _json_script("plot-data", figures) + _json_script("animation-data", anim)
            + (_json_script("comparison-animation", compare_anim) if compare_anim else "")
            + f"<script>{plots_js}</script><script>{MESH_JS}{ANIMATION_JS}</script>"
            + (f"<script>{COMPARISON_JS}</script>" if compare_anim else ""))
    return f"<!DOCTYPE html>\n<html lang='en'><head>{head}</head><body>{body}</body></html>\n"


def write_report(result, path, robot=None, **options) -> Path:
    """Write the report (:func:`report_html`) to ``path`` (a folder gets ``report.html``)."""
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        path = path / "report.html"
    from ..outputs import write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, report_html(result, robot=robot, **options))  # whole or not at all
