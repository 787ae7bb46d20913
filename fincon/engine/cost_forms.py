"""The cost models' short forms: the flat broker keys of a run config (``commission: 0.001``,
``commission_model``, ``commission_per_share``, ``commission_min``, ``commission_max``,
``slippage``, ``slippage_model``) read into the models' mappings, and the registered models written
back in that layout, so config.yaml and every run's identity read as they always have.

Kept apart from the models (:mod:`fincon.engine.costs`) and the config (:mod:`fincon.config`): it is
the one layer that translates between the flags' and old configs' spelling and the typed models.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel

from fincon.engine.costs import (
    COMMISSION_SHORT,
    SLIPPAGE_FIELD,
    SLIPPAGES,
    PercentCommission,
    PerShareCommission,
    ZeroCommission,
)

#: the keys' order in the flat layout (a JSON dump of a config is byte-identical to before)
_FLAT_ORDER = ("cash", "commission", "commission_model", "commission_per_share", "commission_min", "commission_max",
               "slippage", "slippage_model", "participation", "participation_rest", "charge_llm", "fill",
               "cash_buffer")  # fmt: skip
#: the models the flat layout can say (the others are written as their mapping)
_SHORT_COMMISSIONS = (PercentCommission, PerShareCommission, ZeroCommission)
_SHORT_SLIPPAGES = tuple(SLIPPAGES[m] for m in SLIPPAGE_FIELD)


def fold_commission(data: dict) -> Any:
    """``commission`` as a model's mapping, from the flat keys and the number (short forms)."""
    given = data.get("commission")
    model = data.pop("commission_model", None)
    flat = {k: data.pop(k) for k in list(COMMISSION_SHORT) if k != "commission" and k in data}
    if isinstance(given, BaseModel):
        spec: dict[str, Any] = given.model_dump(by_alias=False)
    elif isinstance(given, Mapping):
        spec = dict(given)
    else:
        spec = {} if given is None else {"rate": given}
    if model is not None:
        if "model" in spec and spec["model"] != model and isinstance(given, (Mapping, BaseModel)):
            raise ValueError(f"broker.commission_model {model} and broker.commission.model {spec['model']} disagree")
        spec["model"] = model
    name = spec.setdefault("model", "percent")
    for key, value in flat.items():
        owner, field = COMMISSION_SHORT[key]
        if owner == name:
            spec[field] = value
        elif value != PerShareCommission.model_fields[field].default:
            raise ValueError(
                f"broker.{key} applies to broker.commission_model {owner}, not {name}; set that model or drop broker.{key}"
            )
    if "rate" in spec and name != "percent":
        if spec["rate"] != 0:
            raise ValueError(
                f"broker.commission is the percent model's rate; broker.commission_model {name} does not read it: "
                "drop broker.commission"
                + (" (per-share prices are broker.commission_per_share)" if name == "per-share" else "")
            )
        del spec["rate"]
    return spec


def fold_slippage(data: dict) -> Any:
    """``slippage`` as a model's mapping, from ``slippage_model`` and the number (short forms)."""
    given = data.get("slippage")
    model = data.pop("slippage_model", None)
    if isinstance(given, BaseModel):
        given = given.model_dump()
    if isinstance(given, Mapping):
        spec = dict(given)
        if model is not None and spec.get("model", model) != model:
            raise ValueError(f"broker.slippage_model {model} and broker.slippage.model {spec['model']} disagree")
        spec.setdefault("model", model or "percent")
        return spec
    name = model or "percent"
    if given is None:
        return {"model": name}
    limit = {"percent": 0.1, "bps": 1000.0, "range": 1.0}.get(name)
    if limit is not None and isinstance(given, (int, float)) and given >= limit:
        raise ValueError(f"broker.slippage {given} is too large for the {name} model (below {limit:g})")
    return {"model": name, SLIPPAGE_FIELD.get(name, "fraction"): given}


def flat_layout(out: dict[str, Any], c: Any, sl: Any) -> dict[str, Any]:
    """A broker section's dump ``out`` with the registered models ``c`` (commission) and ``sl``
    (slippage) in the flat layout, keys in :data:`_FLAT_ORDER`."""
    flat = {"commission": 0.0, "commission_model": c.model}
    flat.update(
        {k: PerShareCommission.model_fields[f].default for k, (m, f) in COMMISSION_SHORT.items() if m == "per-share"}
    )
    if type(c) in _SHORT_COMMISSIONS:
        flat.update({k: getattr(c, f) for k, (m, f) in COMMISSION_SHORT.items() if m == c.model})
        out.update(flat)
    if type(sl) in _SHORT_SLIPPAGES:
        out.update({"slippage": getattr(sl, SLIPPAGE_FIELD[sl.model]), "slippage_model": sl.model})
    order = [k for k in _FLAT_ORDER if k in out]
    return {**{k: out[k] for k in order}, **{k: v for k, v in out.items() if k not in order}}
