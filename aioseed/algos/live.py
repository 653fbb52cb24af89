"""Training settings that may change while a run trains: each one's name, range and when it takes effect.

An algorithm's record (``aioseed.algos.builder.Algorithm.live``) lists the fields of its settings that its
agent reads afresh between train steps (from Python, or from a variable the compiled step reads), so a new
value needs no retrace; the learner adds its own (``aioseed.server.live``). ``LiveSetting.parse`` checks a
requested value against the setting's type and range, so a bad request is refused before anything changes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

from aioseed.control import InvalidSetting

SettingKind = Literal["float", "int", "choice"]


@dataclasses.dataclass(frozen=True)
class LiveSetting:
    """One setting that may change between train steps."""

    name: str
    """Its name in the API, the record and the run's config (a field of the algorithm's or the training settings)."""
    kind: SettingKind
    """float, int, or choice (one of ``choices``)."""
    low: float | None = None
    """The smallest value it takes (None: no bound)."""
    high: float | None = None
    """The largest value it takes (None: no bound)."""
    low_open: bool = False
    """``low`` itself is refused (a range open at the bottom, like a learning rate's (0, 1])."""
    high_open: bool = False
    """``high`` itself is refused."""
    choices: tuple[str, ...] = ()
    """The values a choice takes."""
    takes_effect: str = "at the next train step"
    """When a change applies (the docs and the API say so)."""
    section: str = ""
    """The learner config's section it belongs to (an algorithm's, or training); set by whoever lists it."""

    def describe(self) -> str:
        """The values it takes, as error messages and the API give them."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        kind = "an integer" if self.kind == "int" else "a number"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"{kind} in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"

    def parse(self, value: Any) -> Any:
        """``value`` as this setting takes it; InvalidSetting when its type or range is wrong."""
        if self.kind == "choice":
            if value not in self.choices:
                raise InvalidSetting(self.name, f"{self.name} must be {self.describe()}, got {short(value)}")
            return value
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InvalidSetting(self.name, f"{self.name} must be {self.describe()}, got {short(value)}")
        if self.kind == "int" and not float(value).is_integer():
            raise InvalidSetting(self.name, f"{self.name} must be {self.describe()}, got {short(value)}")
        number = int(value) if self.kind == "int" else float(value)
        below = self.low is not None and (number <= self.low if self.low_open else number < self.low)
        above = self.high is not None and (number >= self.high if self.high_open else number > self.high)
        if below or above:
            raise InvalidSetting(self.name, f"{self.name} must be {self.describe()}, got {short(value)}")
        return number

    def as_json(self) -> dict[str, Any]:
        """What the API lists for it."""
        return {"name": self.name, "section": self.section, "takes": self.describe(), "takes_effect": self.takes_effect}


def short(value: Any) -> str:
    """``repr(value)``, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def in_section(section: str, settings: tuple[LiveSetting, ...]) -> tuple[LiveSetting, ...]:
    """``settings`` marked as fields of the learner config's ``section``."""
    return tuple(dataclasses.replace(setting, section=section) for setting in settings)
