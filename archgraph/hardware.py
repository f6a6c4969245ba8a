"""Accelerators as data: the built-in table (archgraph/hardware.yaml, each entry with the datasheet
it comes from) and a user's own from a small YAML file of the same keys, checked as specs are
(an unknown key is refused with a did-you-mean, at its file and line).

Quantities are written with units ("80 GiB", "2039 GB/s", "312 TFLOPS", "400 Gb/s") or as plain
numbers (bytes, bytes per second, FLOP/s).

A name is looked up in any case, with or without the vendor, spaces or dashes, and by the other
names the table lists for it (nvidia-smi's among them):

>>> a100 = accelerator("a100-80gb")
>>> a100.memory == 80 * 2**30, a100.flops["bf16"] == 312e12
(True, True)
>>> accelerator("A100-80G") is a100, accelerator("NVIDIA H100 80GB HBM3").key
(True, 'h100-sxm')
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from .errors import Loc, SpecError, did_you_mean
from .record import Record

TABLE = Path(__file__).with_name("hardware.yaml")
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp4")
KEYS = ("name", "memory", "memory_bandwidth", "flops", "interconnect", "network", "gpus_per_node", "source")
TABLE_KEYS = KEYS + ("aliases",)   # other names people write, in the built-in table only
LINK_KEYS = ("name", "bandwidth")
VENDOR_WORDS = frozenset({"nvidia", "amd", "google", "cloud", "geforce", "instinct"})
UNITS = {  # kind -> unit -> factor
    "bytes": {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30,
              "TiB": 2**40},
    "rate": {"B/s": 1, "MB/s": 1e6, "GB/s": 1e9, "TB/s": 1e12, "Gb/s": 1e9 / 8, "Tb/s": 1e12 / 8},
    "flops": {"FLOPS": 1, "GFLOPS": 1e9, "TFLOPS": 1e12, "PFLOPS": 1e15, "TOPS": 1e12, "POPS": 1e15},
}
_QUANTITY = re.compile(r"^\s*([0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


class Accelerator(Record, frozen=True):
    """One accelerator: bytes of memory, bytes/s of memory bandwidth, dense peak FLOP/s per dtype,
    bytes/s per direction to another GPU of its node (`interconnect`) and across nodes (`network`)."""

    key: str
    name: str
    memory: int
    memory_bandwidth: float
    flops: dict
    interconnect: str
    interconnect_bandwidth: float
    network: str
    network_bandwidth: float
    gpus_per_node: int
    source: str

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s at `dtype`; an accelerator without it is refused by name."""
        if dtype not in self.flops:
            raise SpecError(f"{self.name} has no {dtype} peak in its table ({', '.join(self.flops)})",
                            hint=f"choose --dtype {' or '.join(d for d in self.flops if d in ('bf16', 'fp16', 'fp32'))}"
                                 if any(d in self.flops for d in ('bf16', 'fp16', 'fp32')) else None)
        return self.flops[dtype]


def accelerators() -> dict[str, Accelerator]:
    """The built-in table, by name."""
    return dict(_table()[0])


@lru_cache(maxsize=1)
def _table() -> tuple[dict, dict]:
    """The built-in accelerators by key, and every name each answers to (normalised) -> its key."""
    from .spec.yamlload import load_file
    table, names = {}, {}
    for key, entry in load_file(TABLE).items():
        table[key] = _accelerator(key, entry, f"accelerator {key}", keys=TABLE_KEYS)
        for name in (key, table[key].name, *entry.get("aliases", ())):
            other = names.setdefault(normal_name(str(name)), key)
            if other != key:
                raise SpecError(f"{TABLE}: '{name}' names both {other} and {key}", loc=_loc(entry, "aliases"),
                                hint='give each alias to one entry of the hardware table')
    return table, names


def normal_name(name: str) -> str:
    """A name as people write it, reduced: lower case, no vendor, words joined by '-', a size in
    GB written one way ("NVIDIA A100 80 GB", "a100-80g", "A100_80GB" -> "a100-80gb")."""
    out: list[str] = []
    for word in re.split(r"[^a-z0-9]+", name.lower()):
        if word in ("gb", "g") and out and out[-1].isdigit():
            out[-1] += "gb"
        elif word and word not in VENDOR_WORDS:
            out.append(re.sub(r"^([0-9]+)g$", r"\1gb", word))
    return "-".join(out)


def accelerator(name: str) -> Accelerator:
    """A built-in accelerator by any of its names (a100-80gb, A100, "NVIDIA H100 80GB HBM3", ...)
    or one from a YAML file."""
    table, names = _table()
    if normal_name(name) in names:
        return table[names[normal_name(name)]]
    path = Path(name)
    if name.endswith((".yaml", ".yml")) or path.exists():
        from .spec.yamlload import load_file
        data = load_file(path)
        return _accelerator(path.stem, data, "the accelerator", f"{path} (your file)")
    chip = normal_name(name).split("-")[0]   # "a100-pcie": the A100s, not the H100 PCIe difflib finds closest
    same = [key for key in table if key.split("-")[0] == chip]
    hint = did_you_mean(normal_name(name), same or table) or \
        (f"did you mean {' or '.join(repr(k) for k in same)}?" if same else None)
    raise SpecError(f"--gpu {name}: no such accelerator in the table, and no such file",
                    hint=(f"{hint} " if hint else "") + f"The table: {', '.join(table)}; or the path of a YAML "
                         f"file of your own with {', '.join(KEYS)}")


def _accelerator(key: str, data, where: str, origin: str = "", keys: tuple[str, ...] = KEYS) -> Accelerator:
    _check_keys(data, keys, where)
    for needed in ("memory", "memory_bandwidth", "flops"):
        if needed not in data:
            raise SpecError(f"{where}: the accelerator needs '{needed}'", loc=_loc(data),
                            hint="e.g. memory: 80 GiB, memory_bandwidth: 2039 GB/s, flops: {bf16: 312 TFLOPS}")
    flops = data["flops"]
    if not isinstance(flops, dict) or not flops:
        raise SpecError(f"{where}: flops must map dtypes to peak FLOP/s", loc=_loc(data, "flops"),
                        hint="e.g. flops: {bf16: 312 TFLOPS, fp8: 624 TFLOPS}")
    _check_keys(flops, DTYPES, f"{where}: flops")
    links = {}
    for part in ("interconnect", "network"):
        link = data.get(part, {})
        if not isinstance(link, dict):
            raise SpecError(f"{where}: {part} must be a mapping of name and bandwidth", loc=_loc(data, part),
                            hint=f"e.g. {part}: {{name: NVLink, bandwidth: 300 GB/s}}")
        _check_keys(link, LINK_KEYS, f"{where}: {part}")
        given = link.get("bandwidth")
        links[part] = (str(link.get("name", part)),
                       0.0 if given is None else _quantity(given, "rate", f"{part}.bandwidth", link))
    per_node = data.get("gpus_per_node", 8)
    if isinstance(per_node, bool) or not isinstance(per_node, int) or per_node <= 0:
        raise SpecError(f"{where}: gpus_per_node must be a positive whole number; received {per_node!r}",
                        loc=_loc(data, "gpus_per_node"), hint='write gpus_per_node as a positive whole number: 8')
    return Accelerator(
        key=key, name=str(data.get("name", key)), memory=int(_quantity(data["memory"], "bytes", "memory", data)),
        memory_bandwidth=_quantity(data["memory_bandwidth"], "rate", "memory_bandwidth", data),
        flops={d: _quantity(v, "flops", f"flops.{d}", flops) for d, v in flops.items()},
        interconnect=links["interconnect"][0], interconnect_bandwidth=links["interconnect"][1],
        network=links["network"][0], network_bandwidth=links["network"][1] or links["interconnect"][1],
        gpus_per_node=per_node, source=str(data.get("source", origin or where)))


def _check_keys(data: dict, allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            hint = did_you_mean(str(key), allowed)
            raise SpecError(f"{where}: unknown key '{key}'", loc=_loc(data, key),
                            hint=hint or f"the keys are: {', '.join(allowed)}")


def _quantity(value, kind: str, what: str, owner) -> float:
    """A number (in the kind's base unit) or a number with a unit of the kind."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number, factor = float(value), 1.0
    else:
        match = _QUANTITY.match(str(value))
        unit = match.group(2) if match else ""
        if not match or (unit and unit not in UNITS[kind]):
            raise SpecError(f"{what}: '{value}' is not a quantity of {kind}", loc=_loc(owner, what.split(".")[-1]),
                            hint=f"write a number with one of {', '.join(UNITS[kind])}" +
                                 (f" ({did_you_mean(unit, UNITS[kind])})" if match and did_you_mean(unit, UNITS[kind]) else ""))
        number, factor = float(match.group(1).replace(",", "").replace("_", "")), UNITS[kind].get(unit, 1)
    if not number > 0:
        raise SpecError(f"{what} must be positive; received {value!r}", loc=_loc(owner, what.split(".")[-1]),
                        hint='write it as a positive number')
    return number * factor


def _loc(data, key: str | None = None) -> Loc | None:
    key_loc = getattr(data, "key_loc", None)
    if key_loc is not None and key is not None:
        return key_loc(key)
    return getattr(data, "loc", None)
