from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnvSpec(_message.Message):
    __slots__ = ("observation_shape", "observation_dtype", "num_actions", "frames_per_step")
    OBSERVATION_SHAPE_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_DTYPE_FIELD_NUMBER: _ClassVar[int]
    NUM_ACTIONS_FIELD_NUMBER: _ClassVar[int]
    FRAMES_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    observation_shape: _containers.RepeatedScalarFieldContainer[int]
    observation_dtype: str
    num_actions: int
    frames_per_step: int
    def __init__(self, observation_shape: _Optional[_Iterable[int]] = ..., observation_dtype: _Optional[str] = ..., num_actions: _Optional[int] = ..., frames_per_step: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("slots",)
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    slots: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, slots: _Optional[_Iterable[int]] = ...) -> None: ...

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

class ActorMessage(_message.Message):
    __slots__ = ("hello", "steps")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    steps: Steps
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., steps: _Optional[_Union[Steps, _Mapping]] = ...) -> None: ...

class Actions(_message.Message):
    __slots__ = ("actions",)
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    actions: bytes
    def __init__(self, actions: _Optional[bytes] = ...) -> None: ...

class LearnerMessage(_message.Message):
    __slots__ = ("welcome", "actions")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    actions: Actions
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., actions: _Optional[_Union[Actions, _Mapping]] = ...) -> None: ...
