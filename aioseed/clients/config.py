"""An actor process's settings: its environments and its connection to the learner."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from aioseed.envs.atari import AtariConfig
from aioseed.envs.football import FootballConfig
from aioseed.envs.life_loss import NOT_IN_IMPALA_MODE
from aioseed.envs.registry import EnvBackend, env_kwargs
from aioseed.tokens import token_of


@dataclasses.dataclass(frozen=True)
class ActorConfig:
    """An actor process: environments and the connection to the learner."""

    learner: str = "127.0.0.1:8686"
    """HOST:PORT of the learner."""
    env: str = "CartPole-v1"
    """Gymnasium id of the environment, ALE/<Game>-v5 for Atari, football:<scenario> (gfootball), or
    my_pkg.envs:MyEnv-v0 (imports my_pkg.envs, which registers MyEnv-v0)."""
    env_kwargs: str = "{}"
    """JSON object of keyword arguments for the env's constructor (gymnasium ids), e.g. '{"size": 8}'."""
    num_envs: int = 8
    """Environments in this process (N). A Football game with several controlled players is one env that gives a
    row (an env slot on the learner) per player."""
    envs_per_message: int = 8
    """Envs per stream message (K); each group of K envs has its own stream."""
    token: str | None = None
    """Learner token, sent as gRPC metadata (authorization: Bearer TOKEN)."""
    token_file: pathlib.Path | None = None
    """File whose first line is the learner token, instead of --token (which the process list shows)."""
    tls_ca: pathlib.Path | None = None
    """PEM CA certificate(s): connect with TLS and verify the learner against them (None: plaintext)."""
    tls_server_name: str | None = None
    """Name the learner's certificate is checked against, when it differs from the host in --learner."""
    seed: int | None = None
    """Base seed of the environments (None: random)."""
    env_backend: EnvBackend = "default"
    """default: ale-py's vector env (ALE/ ids), gfootball's engines (football: ids), gymnasium's vector env
    otherwise. envpool: EnvPool's C++ thread pool for the Atari, MuJoCo, Football and classic ids it has
    (pip install 'aioseed[envpool]'); Football from the Super Mini Map with scoring rewards only."""
    name: str | None = None
    """Name shown in the learner's logs and console (default host:pid)."""
    backoff_initial_s: float = 0.05
    """First reconnect delay bound; it doubles per failed attempt (full jitter)."""
    backoff_max_s: float = 5.0
    """Largest reconnect delay."""
    keepalive_s: float = 10.0
    """A connection to the learner silent this long is pinged, and given up (its streams reconnect) if no answer
    comes within keepalive_timeout_s: a learner that vanished without closing it (power loss, a partition) is
    noticed. At least the learner's ping floor (min(its keepalive_s, 5) s), or it closes the connection."""
    keepalive_timeout_s: float = 5.0
    """See keepalive_s."""
    max_steps: int | None = None
    """Stop after this many env steps (None: run until stopped)."""
    atari: AtariConfig = AtariConfig()
    """Preprocessing of ALE/ ids (stack 1 for a learner that stacks frames itself)."""
    football: FootballConfig = FootballConfig()
    """Observations and rewards of football:<scenario> ids (Google Research Football)."""
    evaluation: bool = False
    """Evaluation envs: the learner acts in evaluation mode (R2D2: epsilon 0.001), never learns from their
    steps and reports their returns as charts/eval_return."""
    video_dir: pathlib.Path | None = None
    """Evaluation actors: record episodes of the first env as MP4 clips here (full-colour frames; gymnasium
    and ALE ids). A learner's console shows the newest clip in its LOGDIR/videos (where aioseed run puts them)."""
    video_every: int = 10
    """With video_dir: record the first episode, then every video_every-th."""
    architecture: Literal["seed", "impala"] = "seed"
    """seed: stream every observation; the learner runs the policy. impala: pull the learner's parameters,
    run the policy on this process's CPU (TensorFlow) and upload finished unrolls with their behaviour
    logits (the learner must run --architecture impala)."""
    policy_threads: int = 1
    """IMPALA mode: CPU threads TensorFlow may use for the policy (0: its default, every core)."""
    pull_timeout_s: float = 60.0
    """IMPALA mode: a parameter pull not complete within this many seconds is given up (DEADLINE_EXCEEDED)
    and the stream reconnects, with backoff."""

    @property
    def learner_token(self) -> str | None:
        """The token to send: token, or the first line of token_file (read now)."""
        return token_of(self.token, self.token_file, "--token-file")

    def __post_init__(self) -> None:
        env_kwargs(self.env_kwargs)  # JSON object, or a clear ValueError now
        if self.token is not None and self.token_file is not None:
            raise ValueError("give the token as token or as token_file, not both")
        if self.num_envs < 1 or self.envs_per_message < 1:
            raise ValueError("num_envs and envs_per_message must be >= 1")
        if self.architecture == "impala" and self.evaluation:
            raise ValueError("IMPALA-mode actors cannot run evaluation envs; evaluate with aioseed eval")
        if self.architecture == "impala" and self.atari.episodic_life:
            raise ValueError(NOT_IN_IMPALA_MODE)
        if self.video_dir is not None and not self.evaluation:
            raise ValueError("video_dir records evaluation actors' episodes: add --evaluation")
        if self.video_every < 1:
            raise ValueError(f"video_every must be >= 1, got {self.video_every}")
        if self.pull_timeout_s <= 0:
            raise ValueError(f"pull_timeout_s must be positive, got {self.pull_timeout_s}")
        if self.policy_threads < 0:
            raise ValueError(f"policy_threads must be >= 0, got {self.policy_threads}")
        if self.keepalive_s <= 0 or self.keepalive_timeout_s <= 0:
            raise ValueError("keepalive_s and keepalive_timeout_s must be positive")
        if self.backoff_initial_s <= 0 or self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("need 0 < backoff_initial_s <= backoff_max_s")
