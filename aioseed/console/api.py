"""The console's JSON API and live feed: reads snapshots, writes staged commands.

Reading: ``GET /api/metrics`` (latest snapshot), ``/api/series?since=T``
(snapshots after time T), ``/api/actors``, ``/api/settings``, ``/api/run`` (what the
run is, its key hyperparameters and checkpoints), ``/api/clips`` (evaluation clips, newest
first) and ``/api/clips/NAME`` (one MP4), and the
WebSocket ``/api/feed`` (one message per metrics interval).
Control (token required): ``POST /api/settings`` with any of
``max_batch_size``, ``deadline_ms``, ``auto``, ``learning_rate`` and the live training settings
``GET /api/settings`` lists under ``live`` (applied between train steps and recorded in the run's
``settings/changes.jsonl``); ``POST /api/pause``,
``/api/resume``, ``/api/checkpoint`` and ``/api/actors/{stream}/disconnect``.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

from aiohttp import web

from aioseed.console.auth import WHO
from aioseed.control import CommandFailed, CommandRefused, Control, InvalidSetting

CONTROL = web.AppKey("control", Control)
"""The learner, as the console sees it."""
FEEDS = web.AppKey("feeds", set)
"""Open feed WebSockets, closed when the console shuts down."""
MAX_BATCH_SIZE = 65536
MAX_DEADLINE_MS = 60_000.0


class BadRequest(web.HTTPBadRequest):
    def __init__(self, message: str, field: str | None = None) -> None:
        body = {"error": message} if field is None else {"error": message, "field": field if len(field) <= 64 else field[:61] + "..."}
        super().__init__(text=_dumps(body), content_type="application/json")


def _clean(value: Any) -> Any:
    """NaN/inf -> None, recursively, so the JSON is valid."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _dumps(value: Any) -> str:
    return json.dumps(_clean(value), allow_nan=False)


def _json(value: Any) -> web.Response:
    return web.json_response(value, dumps=_dumps)


def state(control: Control) -> dict[str, Any]:
    """What the live feed pushes: the latest snapshot, the settings and the actors."""
    return {"metrics": control.metrics(), "settings": control.settings(), "actors": control.actors()}


async def get_metrics(request: web.Request) -> web.Response:
    return _json(request.app[CONTROL].metrics())


async def get_series(request: web.Request) -> web.Response:
    try:
        since = float(request.query.get("since", "0"))
    except ValueError:
        raise BadRequest("since must be a number (seconds since the epoch)") from None
    return _json(request.app[CONTROL].series(since))


async def get_actors(request: web.Request) -> web.Response:
    return _json(request.app[CONTROL].actors())


async def get_settings(request: web.Request) -> web.Response:
    return _json(request.app[CONTROL].settings())


async def get_run(request: web.Request) -> web.Response:
    return _json(await request.app[CONTROL].run_info())


CLIP_NAME = re.compile(r"eval-\d+-\d+-\d+\.mp4")
"""The names ``ClipRecorder`` gives finished clips (anything else is not served)."""


def _clips(control: Control) -> list[dict[str, Any]]:
    """Evaluation clips, newest first: name, bytes, time written (one pruned meanwhile is left out)."""
    directory = control.clip_directory()
    if directory is None or not directory.is_dir():
        return []
    clips = []
    for path in sorted((p for p in directory.iterdir() if CLIP_NAME.fullmatch(p.name)), reverse=True):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        clips.append({"name": path.name, "bytes": stat.st_size, "time": stat.st_mtime})
    return clips


async def get_clips(request: web.Request) -> web.Response:
    return _json(await asyncio.to_thread(_clips, request.app[CONTROL]))


async def get_clip(request: web.Request) -> web.FileResponse:
    name = request.match_info["name"]
    if not CLIP_NAME.fullmatch(name):
        raise web.HTTPNotFound(text=_dumps({"error": f"no clip named {name[:40]!r}"}), content_type="application/json")
    directory = request.app[CONTROL].clip_directory()
    if directory is None or not (path := directory / name).is_file():
        raise web.HTTPNotFound(text=_dumps({"error": f"no clip named {name!r} (gone: only the newest are kept)"}), content_type="application/json")
    return web.FileResponse(path, headers={"Content-Type": "video/mp4"})


MAX_BODY_BYTES = 64 * 1024
"""Largest request body the console reads (larger: 413)."""


async def read_json(request: web.Request) -> Any:
    """The body as JSON; BadRequest for a body that is not (bad charset or UTF-8, syntax, nesting).

    Numbers are parsed as floats, so a 400-digit integer is just a large (finite or infinite) float.
    """
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:  # past the app's client_max_size
        raise web.HTTPRequestEntityTooLarge(
            MAX_BODY_BYTES,
            request.content_length or 0,
            text=_dumps({"error": f"the body is larger than {MAX_BODY_BYTES} bytes"}),
            content_type="application/json",
        ) from None
    try:
        text = raw.decode(request.charset or "utf-8")
    except LookupError:
        raise BadRequest(f"unknown charset {request.charset[:32]!r}") from None
    except UnicodeError:  # undecodable bytes; or the "undefined" codec, which refuses any
        raise BadRequest(f"the body is not valid {request.charset or 'utf-8'}") from None
    try:
        return json.loads(text, parse_int=float, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest("the JSON body is nested too deeply") from None
    except ValueError as exc:
        raise BadRequest(f"the body must be JSON: {str(exc)[:100]}") from None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _number(body: dict[str, Any], name: str) -> float | None:
    if name not in body:
        return None
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"{name} must be a finite number, got {_short(value)}")
    return float(value)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


CONSOLE_SETTINGS = frozenset({"max_batch_size", "deadline_ms", "auto", "learning_rate"})
"""Settings of the batcher and the learning rate; every other name is a live training setting."""


def validate_settings(body: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The requested changes, all checked before any is applied: (batcher and learning-rate changes, training
    settings for ``Control.change_settings``, which checks those); BadRequest says what is wrong."""
    if not isinstance(body, dict) or not body:
        raise BadRequest(
            "expected a JSON object of settings: max_batch_size, deadline_ms, auto, learning_rate or the live training "
            "settings GET /api/settings lists"
        )
    training = {name: value for name, value in body.items() if name not in CONSOLE_SETTINGS}
    changes: dict[str, Any] = {}
    size = _number(body, "max_batch_size")
    if size is not None:
        if not size.is_integer() or not 1 <= size <= MAX_BATCH_SIZE:
            raise BadRequest(f"max_batch_size must be an integer in [1, {MAX_BATCH_SIZE}], got {_short(body['max_batch_size'])}", "max_batch_size")
        changes["max_batch_size"] = int(size)
    deadline = _number(body, "deadline_ms")
    if deadline is not None:
        if not 0 <= deadline <= MAX_DEADLINE_MS:
            raise BadRequest(f"deadline_ms must be in [0, {MAX_DEADLINE_MS:g}], got {_short(body['deadline_ms'])}", "deadline_ms")
        changes["deadline_ms"] = deadline
    if "auto" in body:
        if not isinstance(body["auto"], bool):
            raise BadRequest(f"auto must be true or false, got {_short(body['auto'])}", "auto")
        changes["auto"] = body["auto"]
    rate = _number(body, "learning_rate")
    if rate is not None:
        if not 0 < rate <= 1:  # the range of the learner's LEARNING_RATE (aioseed.server.training.settings_record)
            raise BadRequest(f"learning_rate must be in (0, 1], got {_short(body['learning_rate'])}", "learning_rate")
        changes["learning_rate"] = rate
    return changes, training


def _conflict(exc: Exception) -> web.HTTPConflict:
    return web.HTTPConflict(text=_dumps({"error": str(exc)}), content_type="application/json")


def _failed(exc: CommandFailed, applied: dict[str, Any] | None = None) -> web.HTTPInternalServerError:
    """500 for what the learner could not do for a reason outside the request (a full disk); it carries on.
    ``applied``: what the same request changed before that (training settings before the learning rate)."""
    body = {"error": str(exc)} if applied is None else {"error": str(exc), "applied": applied}
    return web.HTTPInternalServerError(text=_dumps(body), content_type="application/json")


async def post_settings(request: web.Request) -> web.Response:
    changes, training = validate_settings(await read_json(request))
    control = request.app[CONTROL]
    applied = None
    if training:  # checked and applied first: a refusal leaves everything as it was
        try:
            applied = await control.change_settings(training, who=request[WHO])
        except InvalidSetting as exc:
            raise BadRequest(str(exc), exc.field) from None
        except CommandRefused as exc:
            raise _conflict(exc) from None
        except CommandFailed as exc:  # the record's disk, not the request: nothing changed
            raise _failed(exc) from None
    if "max_batch_size" in changes or "deadline_ms" in changes:
        control.configure_batcher(changes.get("max_batch_size"), changes.get("deadline_ms"))  # auto goes off
    if "auto" in changes:  # after the settings: the tuner starts from them
        control.set_batching_auto(changes["auto"], "turned off from the console")
    if "learning_rate" in changes:
        try:
            await control.set_learning_rate(changes["learning_rate"], who=request[WHO])  # applies between train steps
        except CommandRefused as exc:
            raise _conflict(exc) from None
        except CommandFailed as exc:  # the training settings above, if any, stay applied
            raise _failed(exc, applied) from None
    settings = control.settings()
    return _json(settings if applied is None else {**settings, "applied": applied})


async def post_pause(request: web.Request) -> web.Response:
    request.app[CONTROL].pause()
    return _json(request.app[CONTROL].settings())


async def post_resume(request: web.Request) -> web.Response:
    request.app[CONTROL].resume()
    return _json(request.app[CONTROL].settings())


async def post_checkpoint(request: web.Request) -> web.Response:
    try:
        path = await request.app[CONTROL].checkpoint_now()
    except CommandRefused as exc:
        raise _conflict(exc) from None
    except CommandFailed as exc:  # the disk, not the request
        raise _failed(exc) from None
    if path is None:
        raise BadRequest("this learner has no logdir, so it keeps no checkpoints")
    return _json({"path": path})


async def post_disconnect(request: web.Request) -> web.Response:
    raw = request.match_info["stream"]
    try:
        request.app[CONTROL].disconnect(int(raw))
    except ValueError:
        raise BadRequest(f"a stream id is an integer, got {_short(raw)}") from None
    except KeyError:
        missing = _dumps({"error": f"no connected actor stream {_short(raw)}"})
        raise web.HTTPNotFound(text=missing, content_type="application/json") from None
    except CommandRefused as exc:
        raise _conflict(exc) from None
    return _json({"disconnected": int(raw)})


async def feed(request: web.Request) -> web.WebSocketResponse:
    """Pushes ``state`` once per metrics interval until the client or the learner goes."""
    control = request.app[CONTROL]
    ws = web.WebSocketResponse(heartbeat=10.0)
    await ws.prepare(request)
    series = control.series()
    first = {"series": series, **state(control)}

    async def push() -> None:
        sent = series[-1].get("time", 0.0) if series else 0.0  # a snapshot taken since is pushed next
        while not ws.closed:
            await asyncio.sleep(min(control.metrics_every_s, 1.0) / 2)
            latest = control.metrics().get("time", 0.0)
            if latest > sent:
                await ws.send_str(_dumps(state(control)))
                sent = latest

    request.app[FEEDS].add(ws)
    try:  # from here on, the socket leaves FEEDS however it ends: the first send may already fail
        await ws.send_str(_dumps(first))
        async with asyncio.TaskGroup() as group:
            pusher = group.create_task(push())
            async for _ in ws:  # reading answers pings and the client's close
                pass
            pusher.cancel()
    except* ConnectionResetError:
        pass
    finally:
        request.app[FEEDS].discard(ws)
    return ws


async def _close_feeds(app: web.Application) -> None:
    for ws in list(app[FEEDS]):
        await ws.close(code=1001, message=b"learner stopping")


def add_routes(app: web.Application) -> None:
    app[FEEDS] = set()
    app.on_shutdown.append(_close_feeds)
    app.router.add_get("/api/metrics", get_metrics)
    app.router.add_get("/api/series", get_series)
    app.router.add_get("/api/actors", get_actors)
    app.router.add_get("/api/settings", get_settings)
    app.router.add_get("/api/run", get_run)
    app.router.add_get("/api/clips", get_clips)
    app.router.add_get("/api/clips/{name}", get_clip)
    app.router.add_get("/api/feed", feed)
    app.router.add_post("/api/settings", post_settings)
    app.router.add_post("/api/pause", post_pause)
    app.router.add_post("/api/resume", post_resume)
    app.router.add_post("/api/checkpoint", post_checkpoint)
    app.router.add_post("/api/actors/{stream}/disconnect", post_disconnect)
