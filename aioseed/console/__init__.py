"""The web console: live metrics and control of a running learner (aiohttp; page assets in ``aioseed/web``).

It sees the learner only through ``aioseed.control.Control``; ``aioseed.compose.learner`` plugs it in.
"""
