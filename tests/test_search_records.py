"""The record layouts Python and the compiled search share (SortedRule, PairKey, WideRules): each is declared
once, as a struct in a .pxd, and the compiled module makes its numpy dtype from that struct. Checked field by
field: names and order, types, and byte offsets against the C compiler's, and records written by numpy by field
name read back through the struct."""
import numpy as np
import pytest

from decoder._ext import compiled_module
from decoder.search import incremental
from decoder.search.model import Weights

from search_fixtures import FEATURES, WEIGHTS
from test_search_chart import models, stores  # noqa: F401 (fixtures: the LMs, stores of random grammars)

_incremental = compiled_module("_incremental")
_chart_grammar = compiled_module("_chart_grammar")

SORTED_RULE_FIELDS = [("score", np.float64), ("estimate", np.float32), ("rule", np.int32),
                      ("target_first", np.int32), ("target_last", np.int32), ("target_length", np.int16),
                      ("junction_gap", np.uint16), ("lhs", np.int32), ("target_lo", np.int64),
                      ("target_hash", np.uint64)]


def test_sorted_rule_dtype_is_the_structs_field_by_field():
    dtype = _incremental.SORTED_RULE_DTYPE
    offsets = _incremental.sorted_rule_offsets()
    assert list(dtype.names) == [name for name, _ in SORTED_RULE_FIELDS]
    for name, kind in SORTED_RULE_FIELDS:
        field_type, offset = dtype.fields[name][:2]
        assert field_type == np.dtype(kind), name
        assert offset == offsets[name], name
    assert dtype.itemsize == offsets["size"]
    # the Python side writes the records in this dtype, not a copy of it
    assert incremental.SORTED_RULE is dtype


def test_sorted_records_written_by_name_read_back_through_the_struct():
    rng = np.random.default_rng(7)
    records = np.zeros(50, dtype=_incremental.SORTED_RULE_DTYPE)
    for name, kind in SORTED_RULE_FIELDS:
        info = np.finfo(kind) if np.issubdtype(kind, np.floating) else np.iinfo(kind)
        if np.issubdtype(kind, np.floating):
            records[name] = rng.normal(size=len(records)).astype(kind) * 100
        else:
            records[name] = rng.integers(info.min, info.max, size=len(records), dtype=kind, endpoint=True)
    read = _incremental.read_sorted_rules(records)
    assert len(read) == len(records)
    for record, fields in zip(records, read):
        assert fields == tuple(record[name].item() for name, _ in SORTED_RULE_FIELDS)


def test_the_engine_refuses_records_of_another_layout(models, stores):
    """Records of the same size with two fields swapped are another layout: an error, not a silent misread."""
    swapped = [("rule", np.int32) if name == "target_first" else ("target_first", np.int32) if name == "rule"
               else (name, kind) for name, kind in SORTED_RULE_FIELDS]
    other = np.dtype(swapped)
    assert other.itemsize == _incremental.SORTED_RULE_DTYPE.itemsize
    with pytest.raises(ValueError, match="records of"):
        _incremental.read_sorted_rules(np.zeros(3, dtype=other))
    _, lm = models
    driver = incremental.IncrementalSearchDriver(stores(0, "left")[1], lm, Weights(FEATURES, WEIGHTS))
    arrays = dict(driver.grammar.arrays, **incremental.sorted_rule_arrays(driver.grammar.arrays, lm))
    arrays["sorted_rules"] = arrays["sorted_rules"].astype(other)  # (the same values, by field name)
    with pytest.raises(ValueError, match="SortedRule"):
        _incremental.IncrementalSearch(arrays, lm, driver.grammar.n_symbols, driver.grammar.goal_symbol,
                                       driver.settings, **driver._engine_weights())


@pytest.mark.parametrize("dtype_name, struct, fields", [
    ("PAIR_KEY_DTYPE", "PairKey", [("right", np.int32), ("rules_lo", np.int32)]),
    ("WIDE_RULES_DTYPE", "WideRules", [("rules_lo", np.int32), ("n_rules", np.int32)]),
])
def test_chart_record_dtypes_are_their_structs(dtype_name, struct, fields):
    dtype = getattr(_chart_grammar, dtype_name)
    offsets = _chart_grammar.record_offsets()[struct]
    assert list(dtype.names) == [name for name, _ in fields]
    for name, kind in fields:
        assert dtype.fields[name][0] == np.dtype(kind) and dtype.fields[name][1] == offsets[name], name
    assert dtype.itemsize == offsets["size"]
