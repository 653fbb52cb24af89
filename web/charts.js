// The console's charts (uPlot): what each plots, sized to its grid cell, tick labels that stay distinct, a second
// axis where a chart's series differ in unit, and a marker at every live settings change.
"use strict";

const WINDOW = 600; // points kept per chart (one per metrics interval)

// Each series: [metric, label] or [metric, label, "right"] for the chart's second axis (another unit).
const CHARTS = [
  { title: "frames/s", series: [["charts/frames_per_s", "frames/s"]] },
  {
    title: "episode return",
    series: [["charts/return", "mean (last 100)"], ["charts/return_last", "last"], ["charts/eval_return", "evaluation envs"],
             ["charts/return_right", "right side (mean)"]],
  },
  { title: "inference batch size", series: [["batcher/batch_size", "mean"], ["batcher/batch_size_max", "max"]] },
  {
    title: "batch fill and action latency (ms)",
    series: [["batcher/fill_ms_p50", "fill p50"], ["batcher/fill_ms_p99", "fill p99"],
             ["inference/latency_ms_p50", "action p50"], ["inference/latency_ms_p99", "action p99"],
             ["batching/target_ms", "p99 target (auto)"]],
  },
  {
    title: "batching settings",
    series: [["batching/max_batch_size", "max batch size (rows)"], ["batching/deadline_ms", "deadline (ms, right)", "right"]],
  },
  { title: "unroll queue depth", series: [["queue/depth", "depth"], ["queue/capacity", "capacity"]] },
  { title: "policy lag (updates)", series: [["learner/policy_lag", "mean over updates"], ["learner/policy_lag_max", "max"]] },
  // The schedules' values in effect: the base rate set below times --impala.lr-schedule; --impala.entropy-schedule.
  { title: "learning rate in effect", series: [["learner/learning_rate", "learning rate"]] },
  { title: "entropy cost in effect", when: "losses/entropy_cost", series: [["losses/entropy_cost", "entropy cost"]] },
  // PPO's diagnostics (V-trace: all but the clip fraction); shown once reported.
  {
    title: "policy drift", when: "policy/kl_behaviour",
    series: [["policy/kl_behaviour", "KL(behaviour || proximal)"], ["losses/approx_kl", "approx KL per update"],
             ["losses/clip_fraction", "clip fraction (right)", "right"], ["policy/rho_below_half", "share of rho < 0.5 (right)", "right"]],
  },
  {
    title: "importance weights and value fit", when: "policy/rho_clipped_mean",
    series: [["policy/rho_clipped_mean", "mean min(1, rho)"], ["policy/explained_variance", "explained variance"]],
  },
  {
    title: "entropy and gradient norm", when: "policy/entropy",
    series: [["policy/entropy", "entropy (nats)"], ["losses/grad_norm", "gradient norm (right)", "right"]],
  },
  {
    title: "losses",
    series: [["losses/total", "total"], ["losses/pg", "pg"], ["losses/baseline", "baseline"], ["losses/entropy", "entropy"],
             ["losses/td_abs", "|TD| (R2D2)"]],
  },
  // One policy per side (--self-play.opponent separate): the right side's network, shown once reported.
  {
    title: "right side: losses", when: "right/losses/total",
    series: [["right/losses/total", "total"], ["right/losses/pg", "pg"], ["right/losses/baseline", "baseline"],
             ["right/losses/entropy", "entropy"], ["right/policy/entropy", "entropy (nats)"]],
  },
  // SAC's (shown once reported): the critics' values against their soft targets, and the temperature.
  {
    title: "SAC: Q values", when: "sac/q_mean",
    series: [["sac/q_mean", "mean min(Q1, Q2)"], ["sac/target_mean", "mean soft target"]],
  },
  {
    title: "SAC: temperature and entropy", when: "sac/alpha",
    series: [["sac/alpha", "alpha"], ["policy/entropy", "entropy (nats, right)", "right"]],
  },
  // TD3's: the critics' values against their clipped double-Q targets.
  {
    title: "TD3: Q values", when: "td3/q_mean",
    series: [["td3/q_mean", "mean min(Q1, Q2)"], ["td3/target_mean", "mean target"]],
  },
  {
    title: "SAC / TD3: gradient norms", when: "losses/actor_grad_norm",
    series: [["losses/grad_norm", "critics"], ["losses/actor_grad_norm", "policy"]],
  },
  { title: "SAC / TD3: losses", when: "losses/critic", series: [["losses/critic", "critics"], ["losses/actor", "policy"]] },
  // Shown once the learner reports them (R2D2's and SAC's replay).
  { title: "replay (unrolls)", when: "replay/size", series: [["replay/size", "size"], ["replay/capacity", "capacity"]] },
  { title: "replay: samples per inserted unroll", when: "replay/ratio", series: [["replay/ratio", "sampled / inserted"]] },
];
const COLOURS = ["#2563eb", "#ea580c", "#16a34a", "#dc2626", "#7c3aed"];
const MARKER = "#a21caf";

// Times (seconds since the epoch) of live settings changes, each drawn as a vertical line on every chart.
let changeTimes = [];

// Tick labels with just enough digits that neighbours differ (0.0015 and 0.002, not 0.002 twice); large
// numbers compact (12.5k, 3M).
function tickLabels(splits) {
  const finite = splits.filter((v) => v != null && Number.isFinite(v));
  if (!finite.length) return splits.map(() => "");
  const step = finite.length > 1 ? Math.abs(finite[1] - finite[0]) : Math.abs(finite[0]) || 1;
  const largest = Math.max(...finite.map(Math.abs));
  if (largest >= 1e4 && step >= 100) {
    return splits.map((v) => (v == null ? "" : compact(v, step)));
  }
  const decimals = Math.min(8, Math.max(0, Math.ceil(-Math.log10(step) + 1e-9)));
  return splits.map((v) => (v == null ? "" : Number(v).toFixed(decimals)));
}

function compact(value, step) {
  const [unit, scale] = Math.abs(value) >= 1e6 ? ["M", 1e6] : ["k", 1e3];
  const decimals = Math.min(3, Math.max(0, Math.ceil(-Math.log10(step / scale) + 1e-9)));
  return `${(value / scale).toFixed(decimals)}${unit}`;
}

// Draws the change markers inside the plot area.
function markersPlugin(box) {
  return {
    hooks: {
      draw: [(u) => {
        const [low, high] = [u.scales.x.min, u.scales.x.max];
        const shown = changeTimes.filter((t) => low != null && t >= low && t <= high);
        box.dataset.markers = String(shown.length);
        const ctx = u.ctx;
        ctx.save();
        ctx.strokeStyle = MARKER;
        ctx.setLineDash([4, 3]);
        ctx.lineWidth = 1.5 * devicePixelRatio;
        for (const t of shown) {
          const x = Math.round(u.valToPos(t, "x", true));
          ctx.beginPath();
          ctx.moveTo(x, u.bbox.top);
          ctx.lineTo(x, u.bbox.top + u.bbox.height);
          ctx.stroke();
        }
        ctx.restore();
      }],
    },
  };
}

function makeChart(spec, index, parent) {
  const box = document.createElement("div");
  box.className = "chart";
  box.dataset.chart = spec.title;
  box.innerHTML = `<h3>${spec.title}</h3>`;
  box.hidden = Boolean(spec.when);
  parent.append(box);
  const right = spec.series.some(([, , side]) => side === "right");
  const axis = (scale, side) => ({
    scale, side, size: 64, stroke: "#475569", grid: { stroke: side === 1 ? "transparent" : "#e2e8f0" },
    values: (u, splits) => {
      const labels = tickLabels(splits);
      box.dataset[scale === "y" ? "yticks" : "y2ticks"] = JSON.stringify(labels);
      return labels;
    },
  });
  const plot = new uPlot({
    width: Math.max(300, box.clientWidth || 440), height: 200,
    legend: { live: false },
    plugins: [markersPlugin(box)],
    scales: right ? { y2: { auto: true } } : {},
    series: [{}, ...spec.series.map(([, label, side], i) => ({
      label, stroke: COLOURS[i], width: 1.5, spanGaps: true, scale: side === "right" ? "y2" : "y",
    }))],
    axes: [{ stroke: "#475569", grid: { stroke: "#e2e8f0" } }, axis("y", 3), ...(right ? [axis("y2", 1)] : [])],
  }, [[], ...spec.series.map(() => [])], box);
  return { spec, plot, data: [[], ...spec.series.map(() => [])], box, index };
}

const charts = CHARTS.map((spec, index) => makeChart(spec, index, document.getElementById("charts")));

// Each chart takes its grid cell's width (the grid decides how many fit a row).
new ResizeObserver(() => {
  for (const chart of charts) {
    const width = chart.box.clientWidth;
    if (width && Math.abs(width - chart.plot.width) > 2) chart.plot.setSize({ width, height: 200 });
  }
}).observe(document.getElementById("charts"));

function addPoint(point) {
  for (const chart of charts) {
    const times = chart.data[0];
    if (times.length && point.time <= times[times.length - 1]) continue;  // seen already: the x axis only ascends
    if (chart.spec.when && point[chart.spec.when] != null) chart.box.hidden = false;
    chart.data[0].push(point.time);
    chart.spec.series.forEach(([key], i) => chart.data[i + 1].push(point[key] ?? null));
    if (chart.data[0].length > WINDOW) chart.data.forEach((column) => column.shift());
    chart.plot.setData(chart.data);
    chart.box.dataset.points = String(chart.data[0].length);
    chart.box.dataset.last = JSON.stringify(chart.spec.series.map(([key]) => point[key] ?? null));
  }
}

// The live settings changes the learner reports (each with its time): markers on every chart.
function showChanges(changes) {
  const times = [...new Set(changes.map((c) => c.time))].sort((a, b) => a - b);
  if (times.length === changeTimes.length && times.every((t, i) => t === changeTimes[i])) return;
  changeTimes = times;
  for (const chart of charts) chart.plot.redraw(false, false);
}

// Clears every chart: a reconnected feed sends the whole history again.
function clearCharts() {
  for (const chart of charts) {
    chart.data = [[], ...chart.spec.series.map(() => [])];
    chart.plot.setData(chart.data);
    chart.box.dataset.points = "0";
  }
}
