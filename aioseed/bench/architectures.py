"""``aioseed bench architectures``: the same training on the same cores for a fixed time, as SEED
(actor processes over loopback gRPC), IMPALA (actor processes that run the policy themselves, one env
at a time by default, and upload unrolls), Sebulba (actor threads in the learner process) and, for the
envs written in TensorFlow, Anakin (act, step and learn compiled together).

Each row is a fresh spawned process: frames/s over the last ``seconds`` after ``warmup_s``, the policy
lag, and the bytes each env step puts on the wire: for SEED a real Steps message of K rows and its
Actions reply, per row; for IMPALA the upload and parameter bytes the learner counted over the window.
The components alone (env stepping, inference at the row's batch size, the train step) give the CPU
split, in core-ms per env step, as ``bench atari`` measures them. The SEED paper's comparison with
IMPALA is printed beside the SEED-vs-IMPALA ratio.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import sys

import numpy as np

from aioseed.bench.atari import components, compute_bound
from aioseed.bench.children import ended, reported
from aioseed.bench.config import ArchitecturesBench, atari_run, cartpole_run
from aioseed.commands.run import RunConfig
from aioseed.server.config import StopConfig

WORKLOADS = {"pong": atari_run, "cartpole": cartpole_run}

PAPER_SEED_VS_IMPALA = {
    "source": "Espeholt et al., SEED RL, ICLR 2020",
    "setting": "DeepMind Lab, IMPALA's deep ResNet: IMPALA with an Nvidia P100 vs SEED on 64 TPU v3 cores",
    "speedup": 80,
    "cost_reduction": "40% to 80%",
}
"""The paper's figures for its central claim: central batched inference beats IMPALA's actor-side inference."""


def impala_run(run: RunConfig, envs_per_message: int) -> RunConfig:
    """``run`` in IMPALA mode: each actor process runs the policy for groups of ``envs_per_message`` envs
    (1: IMPALA's one env per inference). Frames are stacked on the actors, where the policy runs."""
    learner = dataclasses.replace(run.learner, learner_frame_stack=1)
    return dataclasses.replace(run, learner=learner, architecture="impala", envs_per_message=envs_per_message)


def wire_bytes_per_step(run: RunConfig) -> float:
    """Bytes of one Steps message of K rows plus its Actions reply, per row (protobuf framing included)."""
    from aioseed.clients.env_group import env_groups
    from aioseed.proto import aioseed_pb2 as pb

    actor = run.actor_config(0, 0)
    spec, run_ids, groups = env_groups(dataclasses.replace(actor, num_envs=actor.envs_per_message))
    group = groups[0]
    k = len(group)
    request = group.message(np.arange(k, dtype=np.int32)).ByteSize()
    reply = pb.LearnerMessage(actions=pb.Actions(actions=np.zeros(k, "<i4").tobytes())).ByteSize()
    group.close()
    return (request + reply) / k


def _anakin(config, envs: int, results: multiprocessing.Queue) -> None:
    from aioseed import log as logging_setup
    from aioseed.anakin.run import train
    from aioseed.tf_start import start_tensorflow

    logging_setup.configure("warning")
    start_tensorflow()
    results.put(train(config, envs))


def anakin_rate(run: RunConfig, warmup_s: float, seconds: float) -> float:
    """Anakin's env frames/s over the last ``seconds``, in a fresh process."""
    learner = dataclasses.replace(run.learner, logdir=None, stop=StopConfig(after_seconds=warmup_s + seconds), log_every_s=1.0)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_anakin, args=(learner, run.num_actors * run.envs_per_actor, results))
    process.start()
    try:
        history = reported(results, [process], warmup_s + seconds + 300)["history"]
    finally:
        ended(process)
    end_s, end_frames = history[-1]
    start_s, start_frames = next((s, f) for s, f in history if s >= end_s - seconds)
    return (end_frames - start_frames) / max(end_s - start_s, 1e-9)


def measure(bench: ArchitecturesBench, workload: str) -> list[dict[str, object]]:
    run = WORKLOADS[workload]()
    rows = []
    for architecture in bench.architectures:
        if architecture == "anakin":
            if run.learner.env not in ("CartPole-v1", "aioseed/Catch-v0"):
                continue  # Anakin needs the env in TensorFlow
            training = dataclasses.replace(run.learner.training, batch_size=bench.anakin_batch_size)
            learner = dataclasses.replace(run.learner, training=training)
            anakin = dataclasses.replace(run, learner=learner, num_actors=1, envs_per_actor=bench.anakin_envs)
            updates = bench.anakin_envs // bench.anakin_batch_size
            rows.append({
                "architecture": "anakin",
                "envs": bench.anakin_envs,
                "frames_per_s": round(anakin_rate(anakin, bench.warmup_s, bench.seconds)),
                "policy_lag": (updates - 1) / 2,  # the k-th batch of a rollout trains after k updates
                "wire_bytes_per_step": 0.0,
            })
            continue
        if architecture == "impala":
            measured_run = impala_run(run, bench.impala_envs_per_message)
        else:
            measured_run = dataclasses.replace(run, architecture=architecture)
        measured = measure(measured_run, bench.warmup_s, bench.seconds)
        impala = architecture == "impala"
        wire = measured["wire_bytes_per_step"] if impala else wire_bytes_per_step(run) if architecture == "seed" else 0.0
        rows.append({
            "architecture": architecture,
            "frames_per_s": round(measured["frames_per_s"]),
            "policy_lag": round(measured["policy_lag"], 2),
            # IMPALA's actors infer for their own groups only.
            "mean_inference_batch": float(bench.impala_envs_per_message) if impala else round(measured["mean_batch"], 1),
            "wire_bytes_per_step": round(wire, 1),
        })
    seed = next((r for r in rows if r["architecture"] == "seed"), None)
    splits = {}
    for row in rows:
        batch = row.get("mean_inference_batch", seed["mean_inference_batch"] if seed else 32.0)
        if batch not in splits:
            splits[batch] = components(run, float(batch), bench.component_s)
        split = splits[batch]
        row.update({"workload": workload, "env": run.learner.env, "network": run.learner.impala.network})
        if seed:
            row["ratio_vs_seed"] = round(row["frames_per_s"] / seed["frames_per_s"], 2)
        if seed and row["architecture"] == "impala" and row["frames_per_s"]:
            row["seed_vs_impala"] = round(seed["frames_per_s"] / row["frames_per_s"], 2)
            row["paper_seed_vs_impala"] = PAPER_SEED_VS_IMPALA
        row["cpu_core_ms_per_step"] = {
            "env": round(split["env_core_ms_per_step"], 4),
            "inference": round(split["inference_core_ms_per_step"], 4),
            "training": round(split["train_core_ms_per_step"], 4),
        }
        if row["architecture"] != "anakin":  # Anakin's env is not the one the components step
            bound = compute_bound(split, os.cpu_count() or 1)
            row["bound_frames_per_s"] = round(bound)
            row["ratio_vs_bound"] = round(row["frames_per_s"] / bound, 3)
    return rows


def main(bench: ArchitecturesBench) -> int:
    for workload in bench.workloads:
        for row in measure(bench, workload):
            sys.stdout.write((json.dumps(row) if bench.json else json.dumps(row, indent=2)) + "\n")
    return 0
