from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnvSpec(_message.Message):
    __slots__ = ("observation_shape", "observation_dtype", "num_actions", "frames_per_step", "action_box", "action_nvec", "left_players", "right_players")
    OBSERVATION_SHAPE_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_DTYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    FRAMES_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    ACTION_BOX_FIELD_NUMBER: _ClassVar[int]
    ACTION_NVEC_FIELD_NUMBER: _ClassVar[int]
    LEFT_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    RIGHT_PLAYERS_FIELD_NUMBER: _ClassVar[int]
    observation_shape: _containers.RepeatedScalarFieldContainer[int]
    observation_dtype: str
    num_actions: int
    frames_per_step: int
    action_box: BoxSpace
    action_nvec: _containers.RepeatedScalarFieldContainer[int]
    left_players: int
    right_players: int
    def __init__(self, observation_shape: _Optional[_Iterable[int]] = ..., observation_dtype: _Optional[str] = ..., num_actions: _Optional[int] = ..., frames_per_step: _Optional[int] = ..., action_box: _Optional[_Union[BoxSpace, _Mapping]] = ..., action_nvec: _Optional[_Iterable[int]] = ..., left_players: _Optional[int] = ..., right_players: _Optional[int] = ...) -> None: ...

class BoxSpace(_message.Message):
    __slots__ = ("shape", "low", "high")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    shape: _containers.RepeatedScalarFieldContainer[int]
    low: _containers.RepeatedScalarFieldContainer[float]
    high: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, shape: _Optional[_Iterable[int]] = ..., low: _Optional[_Iterable[float]] = ..., high: _Optional[_Iterable[float]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("spec", "num_envs", "run_ids", "previous_slots", "actor_name", "evaluation")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVS_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_SLOTS_FIELD_NUMBER: _ClassVar[int]
    ACTOR_NAME_FIELD_NUMBER: _ClassVar[int]
    EVALUATION_FIELD_NUMBER: _ClassVar[int]
    spec: EnvSpec
    num_envs: int
    run_ids: _containers.RepeatedScalarFieldContainer[int]
    previous_slots: _containers.RepeatedScalarFieldContainer[int]
    actor_name: str
    evaluation: bool
    def __init__(self, spec: _Optional[_Union[EnvSpec, _Mapping]] = ..., num_envs: _Optional[int] = ..., run_ids: _Optional[_Iterable[int]] = ..., previous_slots: _Optional[_Iterable[int]] = ..., actor_name: _Optional[str] = ..., evaluation: _Optional[bool] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("slots", "agent_config", "unroll_length")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    AGENT_CONFIG_FIELD_NUMBER: _ClassVar[int]
    UNROLL_LENGTH_FIELD_NUMBER: _ClassVar[int]
    slots: _containers.RepeatedScalarFieldContainer[int]
    agent_config: str
    unroll_length: int
    def __init__(self, slots: _Optional[_Iterable[int]] = ..., agent_config: _Optional[str] = ..., unroll_length: _Optional[int] = ...) -> None: ...

class Steps(_message.Message):
    __slots__ = ("slots", "run_ids", "rewards", "flags", "observations")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    RUN_IDS_FIELD_NUMBER: _ClassVar[int]
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    slots: bytes
    run_ids: bytes
    rewards: bytes
    flags: bytes
    observations: bytes
    def __init__(self, slots: _Optional[bytes] = ..., run_ids: _Optional[bytes] = ..., rewards: _Optional[bytes] = ..., flags: _Optional[bytes] = ..., observations: _Optional[bytes] = ...) -> None: ...

class Unrolls(_message.Message):
    __slots__ = ("slots", "columns", "episode_returns", "episode_lengths")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_RETURNS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    slots: bytes
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    episode_returns: bytes
    episode_lengths: bytes
    def __init__(self, slots: _Optional[bytes] = ..., columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., episode_returns: _Optional[bytes] = ..., episode_lengths: _Optional[bytes] = ...) -> None: ...

class Column(_message.Message):
    __slots__ = ("name", "data", "dtype")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    data: bytes
    dtype: str
    def __init__(self, name: _Optional[str] = ..., data: _Optional[bytes] = ..., dtype: _Optional[str] = ...) -> None: ...

class ActorMessage(_message.Message):
    __slots__ = ("hello", "steps", "unrolls")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    UNROLLS_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    steps: Steps
    unrolls: Unrolls
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., steps: _Optional[_Union[Steps, _Mapping]] = ..., unrolls: _Optional[_Union[Unrolls, _Mapping]] = ...) -> None: ...

class Actions(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: bytes
    def __init__(self, actions: _Optional[bytes] = ...) -> None: ...

class Accepted(_message.Message):
    __slots__ = ("params_version",)
    PARAMS_VERSION_FIELD_NUMBER: _ClassVar[int]
    params_version: int
    def __init__(self, params_version: _Optional[int] = ...) -> None: ...

class LearnerMessage(_message.Message):
    __slots__ = ("welcome", "actions", "accepted")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    actions: Actions
    accepted: Accepted
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., actions: _Optional[_Union[Actions, _Mapping]] = ..., accepted: _Optional[_Union[Accepted, _Mapping]] = ...) -> None: ...

class ParamsRequest(_message.Message):
    __slots__ = ("have_version",)
    HAVE_VERSION_FIELD_NUMBER: _ClassVar[int]
    have_version: int
    def __init__(self, have_version: _Optional[int] = ...) -> None: ...

class TensorInfo(_message.Message):
    __slots__ = ("name", "dtype", "shape")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    dtype: str
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., dtype: _Optional[str] = ..., shape: _Optional[_Iterable[int]] = ...) -> None: ...

class ParamsChunk(_message.Message):
    __slots__ = ("version", "manifest", "total_bytes", "data")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    MANIFEST_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    version: int
    manifest: _containers.RepeatedCompositeFieldContainer[TensorInfo]
    total_bytes: int
    data: bytes
    def __init__(self, version: _Optional[int] = ..., manifest: _Optional[_Iterable[_Union[TensorInfo, _Mapping]]] = ..., total_bytes: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...
