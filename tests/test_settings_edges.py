"""Every documented setting of a split's work at the edges of its documented range runs the sample in process
(``run_split``, no Spark): no value the documentation allows ends the split with an exception, and every record
read is accounted for, as a page's outcome or a counted skip.

The edges come from the settings' own declarations (pipeline/config.py, the source of docs/configuration.md), so a
setting added there is swept here too. Files and models (checked before Spark starts, test_settings_checked.py),
lists and maps are left to their own tests; a job-level setting (Spark, S3, the corpus stages) to the job's.
"""

from __future__ import annotations

import types
import typing

import annotated_types
import pytest
from pydantic import BaseModel

from conftest import SAMPLE_WARC
from pipeline.config import Settings, load_settings
from pipeline.reading.reader import pages_read
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split

SECTIONS = ("input", "extract", "langid", "perplexity", "index", "output")


def _edges(field) -> list[str]:
    """A field's values at its documented edges, as ``--set`` writes them: a boolean flipped, each other choice,
    a number's bounds (and ten times its default where it has no upper one)."""
    annotation, default = field.annotation, field.default
    if annotation is bool:
        return [str(not default).lower()]
    if typing.get_origin(annotation) is typing.Literal:
        return [value for value in typing.get_args(annotation) if value != default]
    kinds = set(typing.get_args(annotation)) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else {annotation}
    if not kinds & {int, float}:
        return []
    values = []
    for bound in field.metadata:
        if isinstance(bound, annotated_types.Ge):
            values.append(bound.ge)
        elif isinstance(bound, annotated_types.Gt):
            values.append(bound.gt + (1 if int in kinds else 1e-6))
        elif isinstance(bound, annotated_types.Le):
            values.append(bound.le)
    if not any(isinstance(bound, annotated_types.Le) for bound in field.metadata):
        values.append(default * 10 + 1 if isinstance(default, (int, float)) and not isinstance(default, bool) else 1)
    return [str(value) for value in values]


def _cases() -> list[str]:
    cases = []
    for section in SECTIONS:
        model: type[BaseModel] = Settings.model_fields[section].annotation
        for name, field in model.model_fields.items():
            cases += [f"{section}.{name}={value}" for value in _edges(field)]
    return cases


CASES = _cases()


def _total(tree: dict) -> int:
    return sum(_total(value) if isinstance(value, dict) else value for value in tree.values())


def test_the_sweep_reaches_every_kind_of_setting():
    keys = {case.partition("=")[0] for case in CASES}
    assert {"extract.timeout_s", "extract.comments", "perplexity.rule", "langid.enabled", "index.sample_share",
            "input.max_html_bytes", "output.explain_sample"} <= keys
    assert len(CASES) > 60


@pytest.mark.slow
@pytest.mark.parametrize("setting", CASES)
def test_a_setting_at_its_documented_edge_runs_the_sample_and_accounts_for_every_record(setting, tmp_path):
    result = run_split(Split(str(SAMPLE_WARC), 0, 1), load_settings(None, [setting]), str(tmp_path / "out"))
    outcomes = _total(result.get("outcome", {}))
    assert outcomes == pages_read(result["records"])
    assert outcomes + _total(result.get("skip", {})) == result["records"]["read"] == 87
