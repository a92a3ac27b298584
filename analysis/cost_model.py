"""FLOPs and minimal bytes of any kernel, from the cost model its YAML declares.

One mechanism for every kernel (docs/byob.md#cost-models): the shipped
families and a user's benchmark alike declare `flops`, `bytes` (and, for the
hardware-counter comparison, `write_bytes`) in conf/kernel/NAME.yaml as
arithmetic of the run's parameters; `element_bytes` maps dtype names to the
size of an element (read as the parameter `element_bytes`), and
`cost_params` derives a parameter where a row has none (the block kernels'
default `ff`). No kernel name appears here: a kernel without a declaration
gets NaN (a roofline point without a cost model is missing, not wrong).

Evaluated over a whole result table at once (numpy, one pass per kernel),
so a million rows cost a few array operations. The text is parsed with `ast`
and only arithmetic nodes are walked, never `eval`ed: the whitelist of
campaign.job.expr, which checks the text at compose time and evaluates it on
the node for tool-driven kernels (analysis never imports campaign, and this
walker takes arrays). Which declaration applies is the caller's choice
(campaign.commands.analyze: the one recorded in the ledger at submit time, else the
config path's); without one, the shipped conf/kernel/*.yaml by kernel name.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

ArrayLike = Any  # float | np.ndarray; numpy broadcasting does the rest

# A row without a dtype is the contract's default dtype (what the programs run without --dtype).
DEFAULT_DTYPE = "fp32"
COST_KEYS = ("flops", "bytes", "write_bytes")
MAX_TEXT = 400  # as campaign.job.expr: compose time refuses longer ones
SHIPPED_KERNELS = Path(__file__).resolve().parents[1] / "conf" / "kernel"

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod, ast.Pow: np.power,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: np.positive, ast.USub: np.negative}
_CALLS: dict[str, Callable[..., Any]] = {
    "min": lambda *a: functools.reduce(np.minimum, a), "max": lambda *a: functools.reduce(np.maximum, a),
    "ceil": np.ceil, "floor": np.floor, "sqrt": np.sqrt, "log2": np.log2, "abs": np.abs,
}


@dataclass(frozen=True)
class CostModel:
    """One kernel's declared cost model (expressions as text)."""

    flops: str | None = None
    bytes: str | None = None
    write_bytes: str | None = None
    element_bytes: Mapping[str, float] = field(default_factory=dict)
    cost_params: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, doc: Any) -> CostModel | None:
        """The model a kernel's YAML (or its recorded copy) declares; None if it declares none."""
        if not isinstance(doc, Mapping) or not any(doc.get(k) for k in COST_KEYS):
            return None
        text = {k: str(doc[k]) if doc.get(k) else None for k in COST_KEYS}
        try:  # a hand-edited ledger or file: an unusable table is no model, never a failed report
            sizes = {str(k): float(v) for k, v in dict(doc.get("element_bytes") or {}).items()}
            params = {str(k): str(v) for k, v in dict(doc.get("cost_params") or {}).items()}
        except (TypeError, ValueError):
            return None
        return cls(flops=text["flops"], bytes=text["bytes"], write_bytes=text["write_bytes"],
                   element_bytes=sizes, cost_params=params)


def models_from_folders(folders: Iterable[Path]) -> dict[str, CostModel]:
    """The cost models of the kernel YAMLs in `folders`' kernel/ (or the
    folders themselves); an earlier folder wins, as on the config path."""
    out: dict[str, CostModel] = {}
    for folder in reversed(list(folders)):
        kernel_dir = folder / "kernel" if (folder / "kernel").is_dir() else folder
        for path in sorted(kernel_dir.glob("*.yaml")):
            try:
                # libyaml's safe loader where built (the same documents, ~8x faster: two dozen files a report)
                doc = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
            except (OSError, yaml.YAMLError):
                continue  # composing the config reports a broken file; the report goes on without it
            model = CostModel.from_mapping(doc)
            name = doc.get("name", path.stem) if isinstance(doc, Mapping) else path.stem
            if model is not None:
                out[str(name)] = model
            else:
                out.pop(str(name), None)
    return out


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, CostModel]:
    return models_from_folders([SHIPPED_KERNELS])


def shipped_models() -> dict[str, CostModel]:
    """The shipped conf/kernel/*.yaml models by kernel name (read once)."""
    return dict(_shipped())


def evaluate(text: str, columns: Mapping[str, ArrayLike], n_rows: int) -> np.ndarray:
    """`text` over the columns, row by row; NaN where a parameter is missing,
    not a number, or the result is not finite. ValueError for text outside
    the whitelist (or longer than campaign.job.expr allows)."""
    if len(str(text)) > MAX_TEXT:
        raise ValueError(f"cost expression of {len(str(text))} characters; at most {MAX_TEXT}")
    try:
        tree = ast.parse(str(text).strip(), mode="eval")
    except (SyntaxError, RecursionError, MemoryError):
        raise ValueError(f"not an arithmetic expression: {str(text)[:60]!r}") from None
    with np.errstate(all="ignore"):
        value = _walk(tree.body, columns, n_rows)
    out = np.array(np.broadcast_to(np.asarray(value, dtype=float), (n_rows,)), dtype=float)
    out[~np.isfinite(out)] = np.nan
    return out


def _walk(node: ast.expr, columns: Mapping[str, ArrayLike], n_rows: int) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        value = columns.get(node.id)
        return np.full(n_rows, np.nan) if value is None else value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_walk(node.operand, columns, n_rows))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_walk(node.left, columns, n_rows), _walk(node.right, columns, n_rows))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS
            and node.args and not node.keywords):
        return _CALLS[node.func.id](*(_walk(a, columns, n_rows) for a in node.args))
    raise ValueError(f"{type(node).__name__} is not allowed in a cost expression")


def _numeric(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


class _Params(dict[str, Any]):
    """The parameter columns of some rows, converted on first use only."""

    def __init__(self, frame: pd.DataFrame, rows: np.ndarray, model: CostModel,
                 whole: dict[str, np.ndarray | None]) -> None:
        super().__init__()
        self.frame, self.rows, self.model, self.n_rows = frame, rows, model, len(rows)
        self.whole = whole  # numeric columns of the whole frame, converted once for all kernels

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        if name not in self:
            value = self._column(name)
            if name in self.model.cost_params:  # (a ValueError here leaves the count empty: costs())
                fallback = evaluate(self.model.cost_params[name], _Derived(self, name), self.n_rows)
                value = fallback if value is None else np.where(np.isnan(value), fallback, value)
            elif name == "element_bytes":
                if "dtype" in self.frame.columns and "\0dtype" not in self.whole:  # converted once
                    self.whole["\0dtype"] = self.frame["dtype"].to_numpy(dtype=object)
                value = _element_bytes(self.model, self.whole.get("\0dtype"), self.rows)
            self[name] = value
        return self[name] if self[name] is not None else default

    def _column(self, name: str) -> np.ndarray | None:
        if name not in self.whole:
            col = next((c for c in (name, name.replace("_", "-")) if c in self.frame.columns), None)
            self.whole[name] = None if col is None else _numeric(self.frame[col])
        whole = self.whole[name]
        return None if whole is None else whole[self.rows]


class _Derived(Mapping[str, Any]):
    """The parameters a cost_params expression may read: all but itself."""

    def __init__(self, params: _Params, own: str) -> None:
        self.params, self.own = params, own

    def __getitem__(self, name: str) -> Any:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        # a derived parameter reads only the run's own (compose time refuses a chain or a cycle)
        derived = name == self.own or name in self.params.model.cost_params
        return default if derived else self.params.get(name, default)

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0


def _element_bytes(model: CostModel, dtypes: np.ndarray | None, rows: np.ndarray) -> np.ndarray:
    """Element size of each row's dtype (NaN if not declared); looked up once
    per distinct name, not once per row (ten million rows name a few dtypes)."""
    if dtypes is None:
        return np.full(len(rows), model.element_bytes.get(DEFAULT_DTYPE, np.nan))
    codes, uniques = pd.factorize(dtypes[rows])
    # a missing name (code -1) is the default dtype
    sizes = np.array([model.element_bytes.get(str(u), np.nan) for u in uniques]
                     + [model.element_bytes.get(DEFAULT_DTYPE, np.nan)], dtype=float)
    return sizes[codes]


def costs(frame: pd.DataFrame, models: Mapping[str, CostModel] | None = None,
          what: Iterable[str] = ("flops", "bytes")) -> dict[str, np.ndarray]:
    """The declared counts of each row of `frame` (by its `kernel`), NaN
    where its kernel declares none. Vectorised per kernel."""
    models = shipped_models() if models is None else models
    wanted = tuple(what)
    out = {w: np.full(len(frame), np.nan) for w in wanted}
    if frame.empty or "kernel" not in frame.columns:
        return out
    kernels = frame["kernel"].to_numpy(dtype=object)
    whole: dict[str, np.ndarray | None] = {}
    for kernel in pd.unique(kernels):
        model = models.get(str(kernel))
        if model is None:
            continue
        rows = np.flatnonzero(kernels == kernel)
        params = _Params(frame, rows, model, whole)
        for w in wanted:
            text = getattr(model, w)
            if text:
                try:
                    out[w][rows] = evaluate(text, params, len(rows))
                except (ValueError, RecursionError):
                    continue  # a declaration compose time would refuse (a hand-edited ledger): no count
    return out


def _one(kernel: str, what: str, n: ArrayLike, d: ArrayLike, dtype: Any, extra: dict[str, Any],
         models: Mapping[str, CostModel] | None) -> Any:
    n_arr, d_arr = np.asarray(n, dtype=float), np.asarray(d, dtype=float)
    shape = np.broadcast(n_arr, d_arr).shape
    columns: dict[str, Any] = {"kernel": kernel, "n": np.broadcast_to(n_arr, shape).ravel(),
                               "d": np.broadcast_to(d_arr, shape).ravel()}
    if dtype is not None:
        columns["dtype"] = np.broadcast_to(np.asarray(dtype, dtype=object), shape).ravel()
    columns.update({k: np.broadcast_to(np.asarray(v), shape).ravel() for k, v in extra.items()})
    value = costs(pd.DataFrame(columns, index=range(int(np.prod(shape)))), models, (what,))[what].reshape(shape)
    return float(value) if value.ndim == 0 else value


def flops(kernel: str, n: ArrayLike, d: ArrayLike, models: Mapping[str, CostModel] | None = None,
          **extra: Any) -> Any:
    """FLOPs of one call of `kernel` at size n (and d); `extra` are further
    parameters (`ff`). NaN for a kernel without a declared model."""
    return _one(kernel, "flops", n, d, None, extra, models)


def min_bytes(kernel: str, n: ArrayLike, d: ArrayLike, dtype: Any = DEFAULT_DTYPE,
              models: Mapping[str, CostModel] | None = None, **extra: Any) -> Any:
    """Minimal DRAM traffic of one call as declared (`bytes`); NaN if none."""
    return _one(kernel, "bytes", n, d, dtype, extra, models)


def min_write_bytes(kernel: str, n: ArrayLike, d: ArrayLike, dtype: Any = DEFAULT_DTYPE,
                    models: Mapping[str, CostModel] | None = None, **extra: Any) -> Any:
    """The written part of `min_bytes` (`write_bytes`); reads are the rest."""
    return _one(kernel, "write_bytes", n, d, dtype, extra, models)


def add_cost_columns(results: pd.DataFrame, models: Mapping[str, CostModel] | None = None) -> pd.DataFrame:
    """Return `results` with `flops` and `bytes` columns filled where missing.

    Rows that carry their own value keep it (a program may write its own
    counts; tool-driven benchmarks bring theirs); rows of kernels without a model get NaN.
    `models` by kernel name; None: the shipped conf/kernel models.
    """
    # shallow: pandas copies on write, so the columns set below never reach
    # `results`; a deep copy of every column cost ~0.3 s per million rows
    out = results.copy(deep=False)
    derived = costs(out, models)
    for name in ("flops", "bytes"):
        given = _column(out, name) if name in out.columns else np.full(len(out), np.nan)
        out[name] = np.where(np.isnan(given), derived[name], given)
    return out


def _column(df: pd.DataFrame, name: str) -> np.ndarray:
    """A numeric column as float64 (NaN for missing), or all-NaN if absent."""
    if name not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
