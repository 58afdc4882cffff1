"""``warcplex explain``: the page as the pipeline saw it, through the real loop, real WARC bytes and a real browser.

The pure-Python tests run the command on the bundled sample, the real WARCs, a WET record and a hostile page; the
``browser`` ones open explanations in headless Chromium over its DevTools pipe and read the rendered page back; the
``s3`` one reads a finished output from a local S3 server (moto); the ``spark`` one is ``warcplex run
--explain-sample`` with the report's links.
"""

from __future__ import annotations

import gzip
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from lxml import etree

from conftest import SAMPLE_WARC, bench_file, real_warc, write_warc
from test_s3 import BUCKET_IN, BUCKET_OUT, CREDENTIALS, free_port
from pipeline.cli import main as cli_main
from pipeline.config import PROJECT_ROOT, load_settings
from pipeline.document import Document
from pipeline.explain import verdicts as verdicts_module
from pipeline.explain.sample import all_explained, explained_pages
from pipeline.explain.select import document_group
from pipeline.explain.trace import TracingLoop
from pipeline.reading.reader import read_pages
from pipeline.reading.shards import Split
from pipeline.spark.runner import run_split
from pipeline.stats import Stats
from pipeline.steps.loop import StepLoop
from pipeline.writing.outdir import prepare_output

CC_GENUINE = ("cc-genuine", "CC-MAIN-2020-34.sample-from-resiliparse-tests.warc.gz")
OTHER_REAL = [("other-real", name) for name in ("dolma-tests_data_warc_sample-0000.warc.gz",
                                                        "dolma-tests_data_warc_sample-0001.warc.gz",
                                                        "clueweb09-ja.quirk.from-resiliparse-tests.warc.gz")]
WET = ("cc-genuine", "CC-MAIN-2024-22.whirlwind.warc.wet.gz")
# A real modern page with 65 scripts, whose text the filter cuts a few lines from (WCXB dev, not held out).
REAL_PAGE = "wcxb-dev-0050"
# What a script leaves behind if it runs, in every way a page can run one.
MARK = "document.documentElement.setAttribute('data-script-ran', 'yes')"
HOSTILE = f"""<!DOCTYPE html><html><head><title>Hostile</title><base href="https://evil.example/">
<meta http-equiv="refresh" content="0; url=javascript:{MARK}"><link rel="stylesheet" href="https://evil.example/s.css">
<script>{MARK}</script><style>body{{background:url(https://evil.example/bg.png)}} @import "https://evil.example/i.css";</style>
</head><body onload="{MARK}"><h1>The harbour wall repairs</h1>
<p>The council has approved the repair of the harbour wall, which was damaged in the winter storms, and work will start
in the spring once the fishing season ends and the boats are out of the water.</p>
<p>Engineers say the old stone will be reused where it can be, so the wall keeps the look it has had since it was
built, and new stone will come from the same quarry.</p>
<img src="https://evil.example/x.png" onerror="{MARK}"><svg onload="{MARK}"><script>{MARK}</script></svg>
<a href="javascript:{MARK}">a link</a><iframe src="https://evil.example/"></iframe><object data="x.swf"></object>
<embed src="x.swf"><form action="https://evil.example/"><button formaction="javascript:{MARK}">Go</button></form>
<div style="background-image:url('https://evil.example/y.png')" onclick="{MARK}">Subscribe to our newsletter</div>
<noscript><p>Enable JavaScript to read the comments.</p></noscript></body></html>"""


def explain(*args: str) -> int:
    return cli_main(["explain", *map(str, args)])


def srcdoc(page: str) -> str:
    """The framed page of an explanation ('' when it has none)."""
    match = re.search(r"srcdoc='([^']*)'", page)
    return html.unescape(match.group(1)) if match else ""


def pages_of(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.html") if p.name != "index.html")


def bench_page_warc(path: Path, page_id: str, extra: bytes = b"") -> str:
    """A WARC of one WCXB dev page (its original bytes, ``extra`` before ``</body>``); returns its URL."""
    manifest = {json.loads(line)["id"]: json.loads(line)
                for line in bench_file("data-wcxb", "manifest.jsonl").read_text().splitlines()}
    body = gzip.decompress(bench_file("data-wcxb", "wcxb", "pages", f"{page_id}.html.gz").read_bytes())
    if extra:
        body = body.replace(b"</body>", extra + b"</body>", 1)
    write_warc(path, [("200 OK", "text/html; charset=utf-8", None, body)])
    return "https://t.example/0"


# --- the command, the trace and the views (pure Python) ---------------------------------------------------------


def test_sample_warc_pages_are_self_contained_and_inert(tmp_path):
    assert explain("--input", SAMPLE_WARC, "--sample", "4", "--output", tmp_path / "ex") == 0
    files = pages_of(tmp_path / "ex")
    assert len(files) == 4 and not (tmp_path / "ex" / "_tmp").exists()
    index = (tmp_path / "ex" / "index.html").read_text()
    assert all(f"href='{f.name}'" in index for f in files)
    for file in files:
        page = file.read_text()
        assert "http-equiv='Content-Security-Policy'" in page and "default-src 'none'" in page
        assert "<iframe sandbox=''" in page and "<script" not in page.lower()
        framed = srcdoc(page)
        assert "default-src 'none'" in framed and "<script" not in framed.lower()
        assert "wx-main" in framed and "data-wx-block=" in framed
        assert "class='s s-kept'" in page


def test_hostile_page_keeps_nothing_that_runs_or_loads(tmp_path):
    warc = tmp_path / "hostile.warc.gz"
    write_warc(warc, [("200 OK", "text/html", None, HOSTILE.encode())])
    assert explain("--input", warc, "--url", "https://t.example/0", "--output", tmp_path / "ex") == 0
    framed = srcdoc(pages_of(tmp_path / "ex")[0].read_text())
    root = etree.HTML(framed)
    tags = {e.tag for e in root.iter() if isinstance(e.tag, str)}
    assert not tags & {"script", "iframe", "object", "embed", "base", "link"}
    assert not root.xpath("//meta[@http-equiv='refresh']")
    attributes = [(name, value) for e in root.iter() if isinstance(e.tag, str) for name, value in e.attrib.items()]
    assert not [name for name, _ in attributes if name.lower().startswith("on")]
    assert not [v for _, v in attributes if "javascript:" in v.lower()]
    assert not [n for n, _ in attributes if n in ("href", "src", "action", "formaction", "data", "srcset")]
    assert "evil.example/bg.png" not in framed and "@import" not in framed and "evil.example/y.png" not in framed
    assert root.xpath("//img/@data-wx-src") == ["https://evil.example/x.png"]
    # the article's paragraphs are main and outlined so; the newsletter line is not
    main = root.xpath("//p[contains(@class, 'wx-main')]")
    assert len(main) == 2 and "harbour wall" in main[0].text
    assert "Content-Security-Policy" in framed and "Enable JavaScript" in framed  # noscript's text is shown


def test_a_run_traces_nothing(tmp_path):
    """The trace is the explain loop's alone: a run's documents have none, and a split without --explain-sample
    writes no explanation."""
    settings = load_settings(None, [])
    pages = list(read_pages(Split(str(SAMPLE_WARC), 0, 1), settings.input, settings.s3, Stats()))[:3]
    assert all(doc.trace is None for doc in StepLoop(settings).run(pages))
    assert Document.trace is None and "trace" not in Document.__dataclass_fields__
    prepare_output(str(tmp_path / "out"), settings, [str(SAMPLE_WARC)])
    stats = run_split(Split(str(SAMPLE_WARC), 0, 1), settings, str(tmp_path / "out"))
    assert not (tmp_path / "out" / "explain").exists() and "explain" not in stats
    assert all(doc.trace is not None and doc.trace.stages for doc in TracingLoop(settings).run(pages))


@pytest.mark.parametrize("rule", ["fixed", "window", "length", "context"])
def test_verdicts_decide_as_the_filter_does(rule):
    """The threshold each line is shown against decides it as the filter's mask does (the context rule's overturns
    aside, which are shown as the neighbours' decision), on every line of the sample and the real WARCs."""
    settings = load_settings(None, [f"perplexity.rule={rule}", "extract.cascade=[blocks,resiliparse]"])
    loop = TracingLoop(settings)
    paths = [SAMPLE_WARC, real_warc(*CC_GENUINE)]
    checked = neighbours = 0
    for path in paths:
        pages = list(read_pages(Split(str(path), 0, 1), settings.input, settings.s3, Stats()))
        for doc in loop.run(pages):
            threshold = loop.threshold(doc.language_code)
            if threshold is None or not doc.sentences:
                continue
            for verdict in verdicts_module.verdicts(doc.sentences, settings.perplexity, threshold):
                kept = [doc.sentences[i].kept or not doc.sentences[i].reason.startswith("perplexity")
                        for i in verdict.sentences]
                assert all(k == verdict.kept for k in kept) or doc.fallback_reason
                if verdict.decided_by == verdicts_module.UNSCORED:
                    continue
                checked += 1
                if verdict.decided_by == verdicts_module.NEIGHBOURS:
                    neighbours += 1
                    assert rule == "context" and verdict.tokens < settings.perplexity.short_tokens
                else:
                    assert (verdict.faced <= verdict.threshold) == verdict.kept
    assert checked > 100
    assert (neighbours > 0) == (rule == "context")


def real_warcs() -> list[Path]:
    return [real_warc(*CC_GENUINE)] + [real_warc(*parts) for parts in OTHER_REAL]


def test_real_warcs_every_page_explained(tmp_path):
    """Every HTML page of cc-genuine and other-real: a page view whose blocks carry the stage's labels, and the text."""
    for n, warc in enumerate(real_warcs()):
        out = tmp_path / f"ex{n}"
        assert explain("--input", warc, "--sample", "1000", "--output", out) == 0
        for file in pages_of(out):
            page = file.read_text()
            framed = srcdoc(page)
            assert "<table><tr><th>#</th>" in page or "No text." in page
            if "blocks</b> <span class='v" in page:  # the block stage classified the page
                assert re.search(r"class=\"[^\"]*wx-b wx-(main|boilerplate)", framed), file.name


def test_wet_record_has_text_and_path_only(tmp_path):
    assert explain("--input", real_warc(*WET), "--sample", "5", "--output", tmp_path / "ex") == 0
    files = pages_of(tmp_path / "ex")
    assert files
    for file in files:
        page = file.read_text()
        assert "<iframe" not in page and "A WET record: no page to show" in page
        assert "<b>wet</b>" in page and "class='s s-" in page


def run_output(tmp_path: Path, warcs: list[Path], *overrides: str) -> Path:
    """A finished output of the split runner (what each Spark task runs) over ``warcs``, stamped as `warcplex run`
    stamps it, without stats.json (the stamp alone gives the configuration back)."""
    out = tmp_path / "out"
    settings = load_settings(None, list(overrides))
    prepare_output(str(out), settings, [str(w) for w in warcs])
    for warc in warcs:
        run_split(Split(str(warc), 0, 1), settings, str(out))
    return out


def test_kept_text_is_the_runs_row_text(tmp_path):
    """Explaining a finished output's pages gives each page's row text back, on the sample and the real WARCs."""
    import pyarrow.dataset as ds

    warcs = [SAMPLE_WARC] + real_warcs()
    out = run_output(tmp_path, warcs)
    rows = ds.dataset(out / "data", format="parquet").to_table().to_pylist()
    args = ["--from-output", out, "--output", tmp_path / "ex", "--input", *warcs]
    assert explain(*args, "--sample", len(rows)) == 0
    entries = re.findall(r"<tr><td><a href='([^']+)'>.*?</tr>", (tmp_path / "ex" / "index.html").read_text())
    assert len(entries) == len(rows) > 50
    index = (tmp_path / "ex" / "index.html").read_text()
    assert index.count("<span class='same'>same</span>") == len(rows) and "<span class='differs'>" not in index
    # one page by its record id, and the groups the rows fall in
    record = rows[0]["warc_record_id"]
    assert explain("--from-output", out, "--input", *warcs, "--record-id", record, "--output", tmp_path / "one") == 0
    one = pages_of(tmp_path / "one")[0].read_text()
    assert "the same text as the run" in one
    assert rows[0]["title"] and f"<tr><td>title</td><td>{html.escape(rows[0]['title'])} <span" in one  # the row's title
    assert "<td>kept whole</td>" in index and "<td>most of the text dropped by the filter</td>" in index


def test_explain_refuses_another_configuration_and_bad_requests(tmp_path, capsys):
    out = run_output(tmp_path, [SAMPLE_WARC])
    assert explain("--from-output", out, "--set", "perplexity.threshold=5", "--sample", "1", "--output",
                   tmp_path / "ex") == 2
    assert "cannot rebuild the configuration" in capsys.readouterr().err
    assert explain("--input", SAMPLE_WARC, "--url", "https://nowhere.example/", "--output", tmp_path / "ex") == 2
    assert "no such page" in capsys.readouterr().err
    assert explain("--from-output", tmp_path, "--sample", "1", "--output", tmp_path / "ex") == 2
    assert "not the output of `warcplex run`" in capsys.readouterr().err


def test_run_sample_groups_and_links(tmp_path):
    """--explain-sample in the split runner: a page of each group, each explained as the run kept it."""
    out = run_output(tmp_path, real_warcs(), "output.explain_sample=1")
    entries = all_explained(str(out), load_settings(None, []).s3)
    groups = {e["group"] for e in entries}
    per_split = Counter((e["file"].split("/")[0], e["group"]) for e in entries)
    assert set(per_split.values()) == {1} and {"kept_whole", "mostly_dropped"} <= groups
    linked = explained_pages(entries, 1)
    assert sorted(e["group"] for e in linked) == sorted(groups)
    assert any(g.startswith("fell_back:") for g in groups)
    assert all(e["same"] for e in entries)
    for e in entries:
        assert (out / "explain" / e["file"]).exists()


# --- the browser -------------------------------------------------------------------------------------------------


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("chromium is not installed (`make setup-browser` installs it)")


class Chromium:
    """Headless Chromium driven over its DevTools pipe (fds 3 and 4; no websocket client needed). Every script
    parsed in any frame is counted (``Debugger.scriptParsed``)."""

    def __init__(self, profile: Path) -> None:
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()

        def pipes() -> None:
            os.dup2(commands_read, 3)
            os.dup2(answers_write, 4)

        # The framed page stays in the page's process (not an out-of-process frame), so one session sees its DOM.
        self.process = subprocess.Popen(
            [chromium_path(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync",
             "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
             "--disable-site-isolation-trials", "--disable-features=IsolateSandboxedIframes",
             "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=pipes, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(commands_read)
        os.close(answers_write)
        self._buffer = b""
        self._next = 0
        self.scripts = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for method in ("Page.enable", "DOM.enable", "CSS.enable", "Debugger.enable"):
            self.call(method, session=self.session)

    def _message(self) -> dict:
        while b"\0" not in self._buffer:
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        event = json.loads(message)
        if event.get("method") == "Debugger.scriptParsed":
            self.scripts += 1
        return event

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            event = self._message()
            if event.get("id") == self._next:
                if "error" in event:
                    raise RuntimeError(f"{method}: {event['error']}")
                return event.get("result", {})

    def wait(self, method: str, limit: int = 2000) -> None:
        for _ in range(limit):
            if self._message().get("method") == method:
                return
        raise RuntimeError(f"no {method}")

    def open(self, path: Path) -> dict:
        """Load ``path``; return its whole DOM, framed documents included."""
        self.call("Page.navigate", session=self.session, url=path.as_uri())
        self.wait("Page.loadEventFired")
        return self.call("DOM.getDocument", session=self.session, depth=-1, pierce=True)["root"]

    def style(self, node_id: int, name: str) -> str:
        computed = self.call("CSS.getComputedStyleForNode", session=self.session, nodeId=node_id)["computedStyle"]
        return next(p["value"] for p in computed if p["name"] == name)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        os.close(self._commands)
        os.close(self._answers)


def nodes(node: dict):
    yield node
    for key in ("children", "shadowRoots"):
        for child in node.get(key, []):
            yield from nodes(child)
    if "contentDocument" in node:
        yield from nodes(node["contentDocument"])


def attributes(node: dict) -> dict:
    values = node.get("attributes", [])
    return dict(zip(values[::2], values[1::2]))


@pytest.fixture
def browser(tmp_path):
    chromium = Chromium(tmp_path / "profile")
    yield chromium
    chromium.close()


@pytest.mark.browser
def test_browser_shows_labels_and_drops_and_runs_no_script(tmp_path, browser):
    """A real modern page (65 scripts of its own, plus ours that would mark the page if it ran): the main block's
    element is outlined in the main colour, a line the filter dropped is drawn dropped, and no script runs."""
    warc = tmp_path / "page.warc.gz"
    url = bench_page_warc(warc, REAL_PAGE, f"<script>{MARK}</script><img src=x onerror=\"{MARK}\">".encode())
    assert explain("--input", warc, "--url", url, "--output", tmp_path / "ex") == 0
    explanation = pages_of(tmp_path / "ex")[0]
    root = browser.open(explanation)
    everything = list(nodes(root))
    frames = [n for n in everything if n.get("nodeName") == "IFRAME"]
    assert len(frames) == 1 and "contentDocument" in frames[0]
    framed = list(nodes(frames[0]["contentDocument"]))
    main = [n for n in framed if attributes(n).get("data-wx-label") == "main" and n.get("nodeName") == "P"]
    assert len(main) > 5
    assert browser.style(main[0]["nodeId"], "outline-color") == "rgb(26, 152, 80)"
    boilerplate = [n for n in framed if attributes(n).get("data-wx-label") == "boilerplate"]
    assert boilerplate and browser.style(boilerplate[0]["nodeId"], "outline-color") == "rgb(215, 48, 39)"
    dropped = [n for n in everything if "s-dropped" in attributes(n).get("class", "") and "title" in attributes(n)]
    assert dropped and "line-through" in browser.style(dropped[0]["nodeId"], "text-decoration-line")
    assert any("wx-filtered" in attributes(n).get("class", "") or "wx-partfiltered" in attributes(n).get("class", "")
               for n in framed)
    assert not [n for n in everything if "data-script-ran" in attributes(n)]
    assert not [n for n in everything if n.get("nodeName") == "SCRIPT"]
    assert browser.scripts == 0
    # The same page opened as it is runs its scripts and ours: the probe sees what it would have seen.
    original = tmp_path / "original.html"
    original.write_bytes(gzip.decompress(bench_file("data-wcxb", "wcxb", "pages", f"{REAL_PAGE}.html.gz").read_bytes())
                         .replace(b"</body>", f"<script>{MARK}</script></body>".encode(), 1))
    root = browser.open(original)
    assert browser.scripts > 0
    assert attributes(root["children"][-1]).get("data-script-ran") == "yes"


@pytest.mark.browser
def test_browser_a_script_the_cleaning_missed_still_cannot_run(tmp_path, browser):
    """The sandbox and the policies hold alone: a script put back into the framed page after cleaning, and one in
    the explanation itself, do not run."""
    warc = tmp_path / "page.warc.gz"
    write_warc(warc, [("200 OK", "text/html", None, HOSTILE.encode())])
    assert explain("--input", warc, "--url", "https://t.example/0", "--output", tmp_path / "ex") == 0
    explanation = pages_of(tmp_path / "ex")[0]
    page = explanation.read_text()
    inner = html.escape(f"<script>{MARK}</script><img src=x onerror=\"{MARK}\">", quote=True)
    page = page.replace("&lt;/body&gt;", inner + "&lt;/body&gt;", 1).replace("</main>", f"<script>{MARK}</script></main>")
    explanation.write_text(page)
    root = browser.open(explanation)
    everything = list(nodes(root))
    assert [n for n in everything if n.get("nodeName") == "SCRIPT"]  # the scripts are there
    assert not [n for n in everything if "data-script-ran" in attributes(n)]  # and none ran
    assert browser.scripts == 0
    main = [n for n in everything if attributes(n).get("data-wx-label") == "main"]
    assert main and browser.style(main[0]["nodeId"], "outline-color") == "rgb(26, 152, 80)"


# --- with the run, and from S3 -----------------------------------------------------------------------------------


@pytest.mark.spark
def test_run_explain_sample_links_from_the_report(tmp_path, monkeypatch):
    """`warcplex run --explain-sample 1` (real Spark): the report links a page of each outcome group, each the same
    as the run kept it; `warcplex explain --from-output` then runs with the recorded configuration and inputs, from
    another directory than the run's (the inputs were given relative to it, and are recorded absolute)."""
    if shutil.which("java") is None:
        pytest.skip("Java is needed for Spark")
    out = tmp_path / "out"
    inputs = [SAMPLE_WARC, real_warc(*CC_GENUINE)]
    command = [sys.executable, "-m", "pipeline.cli", "run", "--input",
               *(os.path.relpath(path, PROJECT_ROOT) for path in inputs),
               "--output", str(out), "--config", str(PROJECT_ROOT / "conf" / "local.yaml"), "--explain-sample", "1",
               "--dropped", str(tmp_path / "dropped"),
               "--set", "spark.master=local[1]", "--set", "corpus.enabled=false"]
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900,
                            env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["explain"]["pages"] >= 3 and "differs" not in stats["explain"] and stats["cpu"]["explain"] > 0
    report = (out / "report.html").read_text()
    links = re.findall(r"href='(explain/[^']+\.html)'", report)
    assert "<h2>Explained pages</h2>" in report and "explain/index.html" in links
    assert len(links) > 3 and all((out / link).exists() for link in links)
    assert "kept whole" in report and "most of the text dropped by the filter" in report
    manifest = json.loads((out / "_SUCCESS").read_text())
    assert any(entry["path"].startswith("explain/") for entry in manifest["files"])
    assert stats["run"]["inputs"] == [str(path) for path in inputs]
    monkeypatch.chdir(tmp_path)
    assert explain("--from-output", out, "--sample", "4", "--output", tmp_path / "ex") == 0
    index = (tmp_path / "ex" / "index.html").read_text()
    assert index.count("<span class='same'>same</span>") == 4
    pages = [p.read_text() for p in pages_of(tmp_path / "ex")]
    assert all("the same sentences and reasons as here" in p for p in pages)  # the run's --dropped output
    assert any(re.search(r"[1-9][\d,]* sentences, <span class='same'>", p) for p in pages)


@pytest.mark.s3
def test_output_read_back_from_s3(tmp_path):
    """A finished output on S3 (moto): its stamp, rows and the WARC read back over S3, each page the row's text."""
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    if server is None:
        pytest.skip("moto_server is not installed (pip install 'moto[server]')")
    warc = real_warc(*CC_GENUINE)
    port = free_port()
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    saved = dict(os.environ)
    try:
        os.environ.update(CREDENTIALS)
        import boto3

        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        for _ in range(100):
            try:
                client.list_buckets()
                break
            except Exception:
                time.sleep(0.3)
        client.create_bucket(Bucket=BUCKET_IN)
        client.create_bucket(Bucket=BUCKET_OUT)
        client.upload_file(str(warc), BUCKET_IN, f"warc/{warc.name}")
        source = f"s3://{BUCKET_IN}/warc/{warc.name}"
        output = f"s3://{BUCKET_OUT}/run"
        settings = load_settings(None, [f"s3.endpoint_url={endpoint}"])
        prepare_output(output, settings, [source])
        run_split(Split(source, 0, 1), settings, output)
        rows = 0
        for listed in client.list_objects_v2(Bucket=BUCKET_OUT, Prefix="run/data/")["Contents"]:
            if not listed["Key"].endswith(".parquet"):
                continue
            body = client.get_object(Bucket=BUCKET_OUT, Key=listed["Key"])["Body"].read()
            rows += pq.read_table(io.BytesIO(body)).num_rows
        assert explain("--from-output", output, "--input", source, "--set", f"s3.endpoint_url={endpoint}",
                       "--sample", rows, "--output", tmp_path / "ex") == 0
        index = (tmp_path / "ex" / "index.html").read_text()
        assert rows > 10 and index.count("<span class='same'>same</span>") == rows
    finally:
        os.environ.clear()
        os.environ.update(saved)
        process.terminate()
        process.wait(timeout=10)
