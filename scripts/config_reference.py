"""Write docs/configuration.md, the configuration reference, from the settings models.

    python scripts/config_reference.py           # (re)write docs/configuration.md
    python scripts/config_reference.py --check   # exit 1 when docs/configuration.md is stale

The sections and keys are those of :class:`pipeline.config.Settings`, in its order, plus the options
of the steps that have their own (``pipeline.options.<step>``: the one pydantic model a module of
``pipeline/steps/`` defines beside its step). A key's type and default come from the model; its meaning
is its docstring where the model documents fields that way, else the comment block right above its line
in the source (or a comment at the end of that line). A section's meaning is its class docstring, else
the comment above its field in the parent. A key or section without one is an error: describe it where
it is defined, then run this script. ``tests/test_docs.py`` fails when the file is stale.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import io
import json
import pkgutil
import sys
import textwrap
import tokenize
import types
import typing
from functools import cache
from pathlib import Path

import annotated_types
import yaml
from pydantic import BaseModel

from pipeline.config import PROJECT_ROOT, Settings

OUTPUT = PROJECT_ROOT / "docs" / "configuration.md"
COMMAND = "python scripts/config_reference.py"
PRESETS = ("local", "cluster", "nightly", "all-text")  # conf/<name>.yaml, described in the guide


class UndocumentedError(ValueError):
    """Keys or sections of the settings models without a description."""


@cache
def _field_comments(cls: type) -> dict[str, str]:
    """Field name -> the comment block above its line (or at its end) in ``cls``'s own source."""
    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, str] = {}  # line -> comment text, for lines that hold only a comment
    trailing: dict[int, str] = {}  # line -> comment at the end of a line of code
    code_lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            text = token.string.lstrip("#").strip()
            (trailing if token.start[0] in code_lines else comments)[token.start[0]] = text
        elif token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                tokenize.ENDMARKER):
            code_lines.update(range(token.start[0], token.end[0] + 1))
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            lines, line = [], node.lineno - 1
            while line in comments:
                lines.insert(0, comments[line])
                line -= 1
            text = " ".join(lines) or trailing.get(node.end_lineno, "")
            if text:
                found[node.target.id] = text
    return found


def _defining_class(model: type[BaseModel], name: str) -> type:
    return next(cls for cls in model.__mro__ if name in getattr(cls, "__annotations__", {}))


def field_meaning(model: type[BaseModel], name: str) -> str:
    """A field's description: its docstring or ``description``, else the comment above it."""
    info = model.model_fields[name]
    text = info.description or _field_comments(_defining_class(model, name)).get(name, "")
    return " ".join(text.split())


def section_meaning(model: type[BaseModel], parent: type[BaseModel] | None, name: str | None) -> str:
    """A section's description: its class docstring, else the comment above its field in the parent
    (a step's options model without a docstring: its module's first paragraph)."""
    doc = model.__dict__.get("__doc__")
    if doc:
        return " ".join(inspect.cleandoc(doc).split())
    if parent is not None and name:
        return field_meaning(parent, name)
    module_doc = inspect.getmodule(model).__doc__ or ""
    return " ".join(module_doc.split("\n\n")[0].split())


def _is_section(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def type_name(annotation: object) -> str:
    """A reader's name for a field's type: ``int``, ``list of str``, ``one of `a`, `b```, ``str or null``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        name = " or ".join(type_name(a) for a in rest)
        return f"{name} or null" if len(rest) < len(args) else name
    if origin is list:
        return f"list of {type_name(args[0])}"
    if origin is dict:
        return f"map of {type_name(args[0])} to {type_name(args[1])}"
    if origin is tuple:
        return "list of " + ", ".join(type_name(a) for a in args)
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def bounds(metadata: list) -> str:
    """The field's numeric bounds, e.g. ``≥ 0`` or ``0 to 1``."""
    low = high = None
    for item in metadata:
        if isinstance(item, annotated_types.Ge):
            low = f"≥ {item.ge:g}"
        elif isinstance(item, annotated_types.Gt):
            low = f"> {item.gt:g}"
        elif isinstance(item, annotated_types.Le):
            high = f"≤ {item.le:g}"
        elif isinstance(item, annotated_types.Lt):
            high = f"< {item.lt:g}"
    return ", ".join(b for b in (low, high) if b)


def default_text(model: type[BaseModel], name: str) -> str:
    value = model.model_fields[name].get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, tuple):
        value = list(value)
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2**20 and value % 2**20 == 0:
        text += f" ({value // 2**20} MiB)"
    return f"`{text}`" if text != "" else '`""`'


def _cell(text: str) -> str:
    """``text`` for a Markdown table cell: RST literals as code spans, no stray HTML, pipes escaped."""
    parts = text.replace("``", "`").split("`")
    parts[::2] = [part.replace("<", "&lt;").replace(">", "&gt;") for part in parts[::2]]
    return "`".join(parts).replace("|", "\\|")


class Reference:
    """The reference's sections in order, and every key or section found without a description."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.missing: list[str] = []

    def section(self, path: str, model: type[BaseModel], parent: type[BaseModel] | None = None,
                name: str | None = None, level: int = 2) -> None:
        meaning = section_meaning(model, parent, name)
        if not meaning:
            self.missing.append(f"section {path} ({model.__module__}.{model.__qualname__})")
        rows, subsections = [], []
        for key, info in model.model_fields.items():
            if _is_section(info.annotation):
                subsections.append((key, info.annotation))
                continue
            meaning_of_key = field_meaning(model, key)
            if not meaning_of_key:
                self.missing.append(f"{path}.{key} ({_defining_class(model, key).__module__}."
                                    f"{_defining_class(model, key).__qualname__})")
            kind = type_name(info.annotation)
            limits = bounds(info.metadata)
            rows.append(f"| `{key}` | {_cell(kind + (', ' + limits if limits else ''))} "
                        f"| {_cell(default_text(model, key))} | {_cell(meaning_of_key)} |")
        self.parts.append(f"{'#' * level} `{path}`\n\n{_cell(meaning)}\n")
        if rows:
            self.parts.append("| key | type | default | meaning |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
        for key, sub in subsections:
            self.section(f"{path}.{key}", sub, model, key, level + 1)


def step_option_models() -> dict[str, type[BaseModel]]:
    """Step name -> its options model, for the modules of pipeline/steps/ that define one."""
    import pipeline.steps
    from pipeline.steps.base import Step

    found = {}
    for info in pkgutil.iter_modules(pipeline.steps.__path__):
        if info.ispkg:
            continue
        module = importlib.import_module(f"pipeline.steps.{info.name}")
        own = [v for v in vars(module).values() if isinstance(v, type) and v.__module__ == module.__name__]
        steps = [c for c in own if issubclass(c, Step) and c.name == info.name]
        models = [c for c in own if issubclass(c, BaseModel)]
        if len(steps) == 1 and len(models) == 1:
            found[info.name] = models[0]
    return dict(sorted(found.items()))


def preset_table() -> str:
    rows = []
    for name in PRESETS:
        path = PROJECT_ROOT / "conf" / f"{name}.yaml"
        tree = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        keys = []

        def walk(node, prefix):
            for key, value in node.items():
                if isinstance(value, dict) and not (prefix == "spark." and key == "conf"):
                    walk(value, f"{prefix}{key}.")
                elif isinstance(value, dict):
                    keys.extend(f"`spark.conf.{k}={v}`" for k, v in value.items())
                else:
                    shown = json.dumps(value) if not isinstance(value, str) else value
                    keys.append(f"`{prefix}{key}={shown}`")
        walk(tree, "")
        rows.append(f"| [`conf/{name}.yaml`](../conf/{name}.yaml) | {_cell(', '.join(keys))} |")
    return "| preset | sets |\n|---|---|\n" + "\n".join(rows) + "\n"


HEADER = f"""# Configuration reference

<!-- Generated by `{COMMAND}` from the settings models (pipeline/config.py and the
steps' option models). Do not edit by hand: change the comment or docstring of the field, then rerun it. -->

Every key has a built-in default, so `warcplex run` needs no config file. A preset (`--config
conf/cluster.yaml`) overrides some keys, and `--set section.key=value` overrides any one key; values are
YAML (`--set perplexity.enabled=false`, `--set 'extract.cascade=[resiliparse, conservative]'`). Spark
properties, whose names hold dots, go under `spark.conf` (`--set spark.conf.spark.executor.memory=8g`).
An unknown key or a bad value ends the run with one line naming the key, and exit status 2.

`warcplex config [--config FILE] [--set key=value ...]` prints the configuration a run with the same
flags would use, as YAML, with secrets redacted.

Which keys change what a run writes (and so the output's fingerprint, which a rerun into the same
output must match) is in the [guide](guide.md#reruns-and-resume-identity).
"""


def render() -> str:
    """The whole of docs/configuration.md; raises :class:`UndocumentedError` for an undescribed key."""
    reference = Reference()
    for key, info in Settings.model_fields.items():
        reference.section(key, info.annotation, Settings, key)
    options = step_option_models()
    parts = [HEADER, "## Presets\n\nThe presets in `conf/` and the keys each one sets (the rest keep their "
             "defaults):\n", preset_table(), *reference.parts]
    if options:
        parts.append("## Step options: `pipeline.options.<step>`\n\nSettings of steps that are off by default "
                     "and have no section of their own, set as `--set pipeline.options.<step>.<key>=value` "
                     "once the step is in `pipeline.steps`.\n")
        for name, model in options.items():
            before = len(reference.parts)
            reference.section(f"pipeline.options.{name}", model, level=3)
            parts.extend(reference.parts[before:])
    if reference.missing:
        raise UndocumentedError("no description (add a comment above the field, or a docstring) for: "
                                + "; ".join(reference.missing))
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale instead of writing it")
    args = parser.parse_args(argv)
    try:
        text = render()
    except UndocumentedError as exc:
        print(f"config_reference: {exc}", file=sys.stderr)
        return 1
    if args.check:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"config_reference: {OUTPUT.relative_to(PROJECT_ROOT)} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"written: {OUTPUT.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
