"""What a user types: one module per subcommand (``learner``, ``actor``, ``actors``, ``run``, ``evaluate``
for ``eval``, ``serve``), each its config and a ``main`` that returns the exit status; ``terminal`` and
``signals`` serve the ones that run a learner, ``launchers`` ``run``'s local actors. ``report``, ``sweep``
and ``bench`` live in their own packages (``aioseed.results``, ``aioseed.sweep``, ``aioseed.bench``)."""
