"""Which cost model the report applies to a kernel's rows (docs/byob.md#cost-models).

Every kernel declares its FLOPs and bytes in its YAML (analysis/cost_model.py
evaluates them). A ledger may be read far from where it was made (another
machine, a newer checkout, imported rows), so the declaration is looked up
in this order, per kernel name:
1. the kernel as recorded in the ledger at submit time (each provenance
   record keeps the resolved config, with the kernels its experiment ran),
   the newest record that declares a cost model winning: what the campaign
   ran, even if conf/ changed since or the kernel was a user's own;
2. the kernel YAML of that name on the config path now (CAMPAIGN_CONFIG_PATH
   folders first, then the shipped conf/): for imported results and ledgers
   recorded before the shipped kernels declared theirs.
A kernel found in neither has no cost model: its rows carry NaN (or the
counts their own output gave).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml
from sqlalchemy import select

from campaign.config.groups import config_dirs
from campaign.ledger import Ledger
from campaign.ledger.models import Provenance

if TYPE_CHECKING:
    from analysis.cost_model import CostModel

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def cost_models(led: Ledger) -> dict[str, CostModel]:
    """Kernel name -> its cost model, recorded declarations over the config path's."""
    from analysis.cost_model import CostModel, models_from_folders  # lazy: pulls in pandas

    models = models_from_folders(config_dirs())
    seen: set[str] = set()
    with led.session() as s:
        records = s.execute(select(Provenance.config_hash, Provenance.config_yaml).order_by(Provenance.id)).all()
    for digest, text in records:
        if digest in seen or not text:
            continue
        seen.add(digest)
        try:
            doc = yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader: CSafeLoader or SafeLoader)
        except yaml.YAMLError:
            continue
        kernels = doc.get("kernels") if isinstance(doc, dict) else None
        for name, kernel in (kernels or {}).items() if isinstance(kernels, dict) else ():
            model = CostModel.from_mapping(kernel)
            if model is not None:
                models[str(name)] = model
    return models
