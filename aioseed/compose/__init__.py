"""Turning flags, a TOML file or a logdir into live parts, and writing a run's record: the run's config
(``config``), the learner (``learner``), a trained policy (``policy``), devices, SavedModel export,
``config.toml`` (``config_file``), provenance and the console's run description (``run_info``)."""
