"""The ledger's columns are joined to result rows once. Each result row takes
its attempt's ledger values (campaign, state, replicate, planned shape) in
campaign.results.ledger_join, for the analysis read and the export alike; two
hand-made copies of that join (a sort and a search of the rows' keys in each)
were how they could drift. Found statically: in any function, a look-up of
the rows' keys (a search, a hash look-up, a sort of them) outside the one
module, the keys followed through the names assigned from them."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("campaign", "analysis", "resultschema")
THE_JOIN = "campaign/results/ledger_join.py"
# what names a row's key or the selected attempts' keys (scan.row_keys, attach.KEY, scan.pointers' ids)
KEY_NAMES = frozenset({"row_keys", "KEY", "ids"})
KEY_TEXTS = frozenset({"__key", "attempt_id", "file_index"})
# the calls that look keys up among others, or sort them for a search
LOOKUPS = frozenset({"searchsorted", "index_in", "is_in", "isin", "get_indexer", "get_indexer_for", "argsort",
                     "sort_indices", "digitize"})


def _walk(node: ast.AST) -> list[ast.AST]:
    """The nodes under `node`, less the arguments of a call of the one join (`.join(rows, keys)`): what it
    returns are rows and their ledger columns, not keys."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join":
        return [node, *_walk(node.func.value)]
    return [node, *(n for child in ast.iter_child_nodes(node) for n in _walk(child))]


def _mentions(node: ast.AST, tainted: set[str]) -> bool:
    for sub in _walk(node):
        if isinstance(sub, ast.Name) and (sub.id in KEY_NAMES or sub.id in tainted):
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in KEY_NAMES:
            return True
        if isinstance(sub, ast.Constant) and sub.value in KEY_TEXTS:
            return True
    return False


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def key_lookups(source: str) -> list[int]:
    """The lines of `source` that look the rows' keys up: a LOOKUPS call whose
    object or arguments hold a key, or a name assigned from one (within its function)."""
    found = []
    tree = ast.parse(source)
    for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        tainted: set[str] = set()
        changed = True
        while changed:  # the names assigned from a key, and from those, to the end
            changed = False
            for node in ast.walk(func):
                value = getattr(node, "value", None)
                if value is not None and _targets(node) and _mentions(value, tainted):
                    new = set(_targets(node)) - tainted
                    tainted |= new
                    changed = changed or bool(new)
        for node in ast.walk(func):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOOKUPS
                    and any(_mentions(part, tainted) for part in [node.func.value, *node.args, *node.keywords])):
                found.append(node.lineno)
    return sorted(set(found))


def test_the_rows_keys_are_looked_up_in_one_module() -> None:
    found = [f"{path}:{line}" for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))
             if (path := str(p.relative_to(REPO))) != THE_JOIN
             for line in key_lookups(p.read_text(encoding="utf-8"))]
    assert not found, f"the rows' keys looked up outside {THE_JOIN}: a second join of the ledger's columns: {found}"


def test_both_readers_join_through_the_one_module() -> None:
    for path in ("campaign/results/scan.py", "campaign/results/attach.py"):
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.ImportFrom) and n.module == "campaign.results.ledger_join" for n in tree.body), path


def test_the_check_finds_the_copies_it_replaced() -> None:
    """The two hand-made joins this module replaced (scan.frame's, attach's), as they were: both found."""
    scan_copy = '''
def frame(table, ids):
    selected = np.asarray(ids, dtype=np.int64)
    order = np.argsort(selected, kind="stable")
    found = row_keys(table)
    at = np.clip(np.searchsorted(selected[order], found), 0, max(len(selected) - 1, 0))
'''
    attach_copy = '''
def batch(self, rows):
    key = rows.column(KEY).to_numpy(zero_copy_only=False)
    at = np.clip(np.searchsorted(self.keys, key), 0, max(len(self.keys) - 1, 0))
'''
    hashed = '''
def batch(rows, keys):
    at = pc.index_in(rows.column("attempt_id"), value_set=keys)
'''
    assert key_lookups(scan_copy) == [4, 6]
    assert key_lookups(attach_copy) == [4]
    assert key_lookups(hashed) == [3]
    # a look-up of other things than keys (attach's grid columns by their params text) is no join of the ledger's
    grid = '''
def batch(self, rows, name):
    rows, ledger = self.join.join(rows, rows.column(KEY))
    return self.grid.column(name).take(pc.index_in(rows.column("params"), value_set=self.texts))
'''
    assert key_lookups(grid) == []
