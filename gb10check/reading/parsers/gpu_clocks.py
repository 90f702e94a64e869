"""The GPU's performance state, clocks, power, temperature and clock event reasons ("throttle reasons"), from
`nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits` (one line per GPU, the fields in order).

The field names are nvidia-smi's (`nvidia-smi --help-query-gpu`): `clocks_event_reasons.*`, each "Active" or
"Not Active", `clocks_event_reasons.active` the bitmask of NVML's nvmlClocksEventReason* (0x1 GPU idle, 0x4 SW
power cap, 0x8 HW slowdown, 0x20 SW thermal slowdown, 0x40 HW thermal slowdown, 0x80 HW power brake
slowdown). A field the GPU does not report is `[N/A]` or `[Not Supported]` (GB10 reports its memory as
`[N/A]`): None here, never a number. Pure: text in, GpuClocks out, ParseError with the excerpt otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = [
    "FIELDS",
    "QUERY",
    "REASONS",
    "SLOWDOWNS",
    "WHAT",
    "GpuClocks",
    "parse_gpu_clocks",
]

# what each reason means, in the words of nvidia-smi's help (the name it has in the query)
REASONS = {
    "hw_slowdown": "HW slowdown (clocks cut by half or more: temperature or an external power brake)",
    "hw_thermal_slowdown": "HW thermal slowdown (the GPU too hot)",
    "hw_power_brake_slowdown": "HW power brake slowdown (the power supply asserted its brake)",
    "sw_thermal_slowdown": "SW thermal slowdown (the driver keeps the GPU below its temperature limit)",
    "sw_power_cap": "SW power cap (the driver holds the power draw at its limit)",
}
# the reasons that hold the clocks down whatever the load: a fault of cooling or power, never a choice
SLOWDOWNS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
FIELDS = (
    "pstate",
    "clocks.sm",
    "clocks.max.sm",
    "power.draw",
    "temperature.gpu",
    "clocks_event_reasons.active",
    *(f"clocks_event_reasons.{r}" for r in REASONS),
)
QUERY = f"nvidia-smi --query-gpu={','.join(FIELDS)} --format=csv,noheader,nounits"
_NOT_REPORTED = {"[N/A]", "N/A", "[Not Supported]", "Not Supported"}
_PSTATE = re.compile(r"P\d{1,2}")
_MASK = re.compile(r"0x[0-9A-Fa-f]{1,16}")
WHAT = "nvidia-smi --query-gpu=pstate,clocks...,clocks_event_reasons.* (csv)"


@dataclass(frozen=True)
class GpuClocks:
    pstate: str | None
    sm_mhz: float | None
    max_sm_mhz: float | None
    power_w: float | None
    temperature_c: float | None
    mask: int | None  # clocks_event_reasons.active
    reasons: dict[str, bool | None]  # REASONS' names -> Active (None: not reported)

    @property
    def active(self) -> list[str]:
        return [r for r, on in self.reasons.items() if on]

    @property
    def idle(self) -> bool | None:
        """The driver's own word that nothing runs (bit 0x1 of the mask)."""
        return None if self.mask is None else bool(self.mask & 0x1)

    @property
    def reported(self) -> bool:
        """Whether the GPU reports its event reasons at all (some report every one as [N/A])."""
        return any(on is not None for on in self.reasons.values())

    def shown(self) -> str:
        sm = ""
        if self.sm_mhz is not None:
            of = f" of {self.max_sm_mhz:.0f}" if self.max_sm_mhz is not None else ""
            sm = f"SM {self.sm_mhz:.0f}{of} MHz"
        parts = [
            self.pstate or "P-state not reported",
            sm,
            f"{self.power_w:g} W" if self.power_w is not None else "",
            f"{self.temperature_c:g} C" if self.temperature_c is not None else "",
        ]
        active = ", ".join(self.active) if self.active else "no clock event reason" if self.reported else ""
        return ", ".join(p for p in parts if p) + (f"; {active}" if active else "; reasons not reported")


def _number(text: str, field: str, line: str, whole: str) -> float | None:
    if text in _NOT_REPORTED:
        return None
    try:
        return float(text)
    except ValueError:
        raise ParseError(WHAT, f"{field} is not a number: {excerpt(text, 40)} in {excerpt(line, 160)}", whole) from None


def parse_gpu_clocks(text: str) -> GpuClocks:
    """The first GPU's line (a GB10 node has one)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError(WHAT, "no GPU line", text)
    line = lines[0]
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(FIELDS):
        raise ParseError(WHAT, f"expected {len(FIELDS)} comma-separated fields, found {len(values)}", text)
    named = dict(zip(FIELDS, values, strict=True))
    pstate = named["pstate"]
    if pstate not in _NOT_REPORTED and not _PSTATE.fullmatch(pstate):
        raise ParseError(WHAT, f"pstate is not P0-P15: {excerpt(pstate, 40)}", text)
    mask_text = named["clocks_event_reasons.active"]
    if mask_text not in _NOT_REPORTED and not _MASK.fullmatch(mask_text):
        raise ParseError(WHAT, f"clocks_event_reasons.active is not a bitmask: {excerpt(mask_text, 40)}", text)
    reasons: dict[str, bool | None] = {}
    for reason in REASONS:
        said = named[f"clocks_event_reasons.{reason}"]
        if said in _NOT_REPORTED:
            reasons[reason] = None
        elif said in ("Active", "Not Active"):
            reasons[reason] = said == "Active"
        else:
            raise ParseError(WHAT, f"{reason} is neither Active nor Not Active: {excerpt(said, 40)}", text)
    return GpuClocks(
        pstate=None if pstate in _NOT_REPORTED else pstate,
        sm_mhz=_number(named["clocks.sm"], "clocks.sm", line, text),
        max_sm_mhz=_number(named["clocks.max.sm"], "clocks.max.sm", line, text),
        power_w=_number(named["power.draw"], "power.draw", line, text),
        temperature_c=_number(named["temperature.gpu"], "temperature.gpu", line, text),
        mask=None if mask_text in _NOT_REPORTED else int(mask_text, 16),
        reasons=reasons,
    )
