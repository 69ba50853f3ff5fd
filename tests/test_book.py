"""The pipeline on a small book of its own: papermill runs, failures, rows, the HTML build, a browser."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from vitlab.book import figures, runner as book, report
from vitlab.contract import layout
from vitlab.contract.context import RunContext
from vitlab import results

ROOT = Path(__file__).resolve().parent.parent


def _notebook(path: Path, body: str, title: str) -> None:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('context = {"device_type": "auto", "preset": "quick"}')
    params.metadata["tags"] = ["parameters"]
    figure = nbformat.v4.new_code_cell(body, metadata={"mystnb": {"image": {"alt": TOY_ALT}}})  # myst-nb's own key
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {title}\n\nA test chapter."), params, figure]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


TOY_ALT = "Line chart: a toy plot of three rising points"
RECORD = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from vitlab import chapter, timing
run = chapter.start(NAME, None, context)
rec = run.rec
t = timing.timed(lambda: sum(range(1000)), warmup=1, iters=5)
rec.record("toy", "eager", 1, timing=t, baseline=True)
rec.record("toy", "faster", 1, timing=timing.Timing([v / 2 for v in t.samples_ms], None, 0))
fig, ax = plt.subplots(); ax.plot([1, 2, 3]); ax.set_title("a plot")
import io
from IPython.display import Image, display
png = io.BytesIO(); fig.savefig(png, format="png"); display(Image(png.getvalue()))  # an image output, as on a page
"""


@pytest.fixture
def small_book(tmp_path):
    """A copy of the book's config and intro, with three chapters: ok, failing mid-way, ok."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    shutil.copy(ROOT / "_config.yml", tmp_path)
    shutil.copytree(ROOT / "requirements", tmp_path / "requirements")
    shutil.copy(ROOT / "book" / "intro.md", tmp_path / "book")
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext")  # _config.yml's local extension
    shutil.copytree(ROOT / "book" / "_static", tmp_path / "book" / "_static")  # and its stylesheet
    _notebook(tmp_path / "notebooks" / "01_first.ipynb", "NAME = '01_first'\n" + RECORD, "First chapter")
    _notebook(tmp_path / "notebooks" / "02_broken.ipynb",
              "from vitlab import results\nresults.Recorder('02_broken', 'cpu', 'quick', context['rows'])"
              ".record('toy', 'eager', 1)\n"
              "raise RuntimeError('made to fail mid-way')", "Broken chapter")
    _notebook(tmp_path / "notebooks" / "03_third.ipynb", "NAME = '03_third'\n" + RECORD, "Third chapter")
    other = tmp_path / "book" / "results" / "cuda.jsonl"
    other.parent.mkdir()
    other.write_text(json.dumps({"backend": "cuda", "notebook": "01_first", "model": "toy", "variant": "eager",
                                 "batch": 1, "throughput": 10.0, "run_id": "old", "time": "2026-01-01"}) + "\n")
    return tmp_path


def test_select_by_number_stem_or_name(small_book):
    assert [p.stem for p in book.select(["03", "01_first", "broken"], small_book)] == ["03_third", "01_first", "02_broken"]
    with pytest.raises(KeyError, match="unknown notebook 'nine': choose from 01_first, 02_broken, 03_third"):
        book.select(["nine"], small_book)


@pytest.fixture
def ran_book(small_book, monkeypatch):
    cuda_before = (small_book / "book" / "results" / "cuda.jsonl").read_bytes()
    (small_book / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(small_book / "tmp"))  # where run_notebook stages each chapter
    outcomes = book.run("cpu", "cpu", "quick", book.chapters(small_book), book.stack(), small_book / "book",
                        root=small_book)
    return small_book, outcomes, cuda_before


def test_a_failing_notebook_is_reported_and_the_rest_still_run(ran_book):
    root, outcomes, cuda_before = ran_book
    stack = book.stack()
    pages, rows_file = layout.pages_dir("cpu", stack, root / "book"), layout.rows_file("cpu", stack, root / "book")
    assert [(o.notebook, o.ok) for o in outcomes] == [("01_first", True), ("02_broken", False), ("03_third", True)]
    assert "RuntimeError: made to fail mid-way" in outcomes[1].detail
    assert sorted(p.name for p in pages.iterdir()) == ["01_first.ipynb", "03_third.ipynb"]
    executed = nbformat.read(pages / "01_first.ipynb", as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and '"device_type": "cpu"' in injected[0].source  # papermill injected the context,
    assert "remove-cell" in injected[0].metadata["tags"]                    # which the page does not show
    rows = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert sorted({r["notebook"] for r in rows}) == ["01_first", "03_third"]  # the failed run's row stays out
    assert len({r["run_id"] for r in rows}) == 1  # one run id for the whole `vitlab run`, handed to each chapter
    assert [r["status"] for r in rows] == ["ok"] * 4 and {o.rows for o in outcomes if o.ok} == {2}
    assert (root / "book" / "results" / "cuda.jsonl").read_bytes() == cuda_before
    assert list((root / "tmp").iterdir()) == []  # every chapter's staging folder is gone, the failed one's too


HOST_ROWS = """
import json, os
from vitlab import results
rec = results.Recorder("04_host", context["device_type"], context["preset"], context["rows"], context["run_id"],
                       context["git_sha"])
rec.record("toy", "on the device", 1, baseline=True)
results.Recorder("04_host", "cpu", "quick", context["host_rows"], context["run_id"]).record("toy", "on the host", 1)
os.environ["VITLAB_TOY"] = "set in the kernel"  # the kernel's own environment: the runner's stays as it was
print(json.dumps({"context": context}))
"""


def test_run_notebook_keeps_the_runs_rows_drops_the_host_rows_and_leaves_the_environment_alone(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where run_notebook stages the chapter
    notebook = tmp_path / "notebooks" / "04_host.ipynb"
    notebook.parent.mkdir()
    _notebook(notebook, HOST_ROWS, "Host rows")
    (tmp_path / "results.jsonl").write_text(json.dumps({"notebook": "earlier", "run_id": "old"}) + "\n")
    context = RunContext("cpu", "cuda", "quick", "current", "run-42", "abc123", hub_offline=True)
    environment = dict(os.environ)
    outcome = book.run_notebook(notebook, tmp_path / "pages", tmp_path / "results.jsonl", context, root=tmp_path)
    assert dict(os.environ) == environment
    assert outcome.ok and outcome.rows == 1, outcome.detail
    assert "1 host-CPU rows of a cuda run not kept" in outcome.detail
    rows = results.load_file(tmp_path / "results.jsonl")
    assert [(r["notebook"], r.get("variant"), r["run_id"]) for r in rows] == [
        ("earlier", None, "old"), ("04_host", "on the device", "run-42")]  # appended; the host row is not kept
    assert rows[1]["git_sha"] == "abc123" and rows[1]["status"] == "ok"
    cells = nbformat.read(tmp_path / "pages" / "04_host.ipynb", as_version=4).cells
    printed = json.loads(cells[-1].outputs[0]["text"])
    # no side channel: everything about the run came as the one `context` parameter, where the rows go included
    assert printed["context"] == {**context.to_dict(), "rows": printed["context"]["rows"],
                                  "host_rows": printed["context"]["host_rows"]}
    assert printed["context"]["rows"].endswith("rows.jsonl") and printed["context"]["host_rows"]
    assert RunContext.from_dict(printed["context"]).run_id == "run-42"
    assert list((tmp_path / "tmp").iterdir()) == []  # the staging folder, host rows and all, is gone


@pytest.mark.parametrize("torch_version, stack", [
    ("2.8.0", "reference"), ("2.8.0+cpu", "reference"), ("2.8.0+cu128", "reference"),
    ("2.14.1", "current"), ("2.11.0+cu130", "current"), ("2.8.1", "current"), ("2.8.0a0", "current"),
])
def test_one_stack_rule_drops_the_local_version_tag(torch_version, stack):
    assert book.stack_of(torch_version) == stack


def test_the_reference_torch_is_requirements_reference_txts_pin():
    pins = (ROOT / "requirements" / "reference.txt").read_text().splitlines()
    assert [line.split("==")[1].strip() for line in pins if line.startswith("torch==")] == [layout.REFERENCE_TORCH]


def test_the_installed_stack_is_the_rule_applied_to_the_installed_torch():
    import importlib.metadata
    assert book.stack() == book.stack_of(importlib.metadata.version("torch"))


def test_vitlab_run_through_the_cli_runs_a_chapter_into_a_folder(tmp_path, monkeypatch, capsys):
    """`vitlab run --backend cpu --into DIR` end to end in this process. The CLI has no option for another
    notebooks folder, so the chapter list is pointed at a toy one."""
    from vitlab import cli
    (tmp_path / "notebooks").mkdir()
    _notebook(tmp_path / "notebooks" / "01_first.ipynb", "NAME = '01_first'\n" + RECORD, "First chapter")
    monkeypatch.setattr(book, "chapters", lambda root=None: sorted((tmp_path / "notebooks").glob("*.ipynb")))
    into = tmp_path / "into"
    assert cli.main(["run", "--backend", "cpu", "--preset", "quick", "--only", "01", "--into", str(into)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1 of 1 notebooks ran"
    stack = book.stack()
    assert (layout.pages_dir("cpu", stack, into) / "01_first.ipynb").exists()
    rows = results.load_file(layout.rows_file("cpu", stack, into))
    assert [(r["notebook"], r["variant"], r["backend"], r["preset"]) for r in rows] == [
        ("01_first", "eager", "cpu", "quick"), ("01_first", "faster", "cpu", "quick")]
    assert results.row_problems(rows) == []


@pytest.mark.book_build
def test_the_book_builds_and_renders_in_a_browser(ran_book, tmp_path):
    root = ran_book[0]
    # `vitlab book` only reads rows and runs Jupyter Book: it builds with torch unimportable.
    code = ("import sys; sys.modules['torch'] = None\nfrom pathlib import Path\nfrom vitlab.book import runner as book\n"
            "print(book.build(Path(sys.argv[1])))")
    built = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    index = Path(built.stdout.strip().splitlines()[-1])
    assert index.exists()
    reference = book.stack() == "reference"
    toc = (root / "_toc.yml").read_text()
    chapter = "book/cpu/01_first" if reference else "book/current/cpu/01_first"
    assert chapter in toc and "02_broken" not in toc
    page = (root / "book" / "results.md").read_text()
    assert "not run yet" in page and "vitlab run --backend xpu" in page
    assert f"| {'cpu' if reference else 'cpu (current stack)'} | toy | faster | 1 |" in page
    built_page = _Page((root / "_build" / "html" / f"{chapter}.html").read_text())
    assert [alt for _, alt in built_page.images if "logo" not in alt] == [TOY_ALT]  # the cell's mystnb.image.alt
    assert built_page.title.startswith(f"First chapter (CPU, {book.stack()} stack)")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Chromium is not installed: run tools/setup-browser.sh")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait
    options = webdriver.ChromeOptions()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.binary_location = chromium
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        html = root / "_build" / "html"
        # index.html is Jupyter Book's meta-refresh redirect to the root page: wait until it lands there.
        checks = {"index.html": ("book/intro.html", "vitlab", 0),
                  f"{chapter}.html": (f"{chapter}.html", "First chapter", 1),
                  "book/results.html": ("book/results.html", "Results across backends", 1)}
        for page_path, (lands_on, text, images) in checks.items():
            driver.get((html / page_path).as_uri())
            WebDriverWait(driver, 30).until(lambda d: d.current_url.endswith(lands_on)
                                            and d.find_elements("tag name", "main"))
            assert text in driver.find_element("tag name", "main").text
            loaded = driver.execute_script(
                "return [...document.querySelectorAll('main img')].filter(i => i.complete && i.naturalWidth > 0).length")
            assert loaded >= images, f"{page_path}: {loaded} images rendered"
            links = driver.execute_script("return [...document.querySelectorAll('a[href]')].map(a => a.href)")
            for link in links:
                if link.startswith("file://"):
                    target = Path(link[len("file://"):].split("#")[0].split("?")[0])
                    assert target.exists(), f"{page_path} links to missing {target}"
    finally:
        driver.quit()


CHAPTER_PAGES = sorted(p.relative_to(ROOT).with_suffix("").as_posix()
                       for p in (ROOT / "book").glob("**/[0-9][0-9]_*.ipynb"))  # book/[current/]<backend>/NN_name


class _Page(HTMLParser):
    """A built page's hrefs and its visible text (no tag attributes, scripts or styles)."""

    def __init__(self, html: str):
        super().__init__()
        self.hrefs, self.text, self._hidden = [], [], 0
        self.images, self.rel, self.title, self._in_title = [], {}, "", False  # (src, alt); rel -> (href, title)
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self._hidden += tag in ("script", "style")
        self.hrefs += [value for name, value in attrs if tag == "a" and name == "href" and value]
        attributes = dict(attrs)
        if tag == "img":
            self.images.append((attributes.get("src"), attributes.get("alt")))
        if tag == "link" and attributes.get("rel") in ("prev", "next"):
            self.rel[attributes["rel"]] = (attributes.get("href"), attributes.get("title"))
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._hidden -= tag in ("script", "style")
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if not self._hidden:
            self.text.append(data)


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """The repository's own book (every executed chapter), built once in a copy so the tree stays as it is."""
    root = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, root)
    for name in ("book", "notebooks", "requirements"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    book.build(root)
    return root / "_build" / "html"


@pytest.mark.book_build
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_chapter_pages_show_the_story_and_launch_the_clean_notebook(built_book, page):
    html = (built_book / f"{page}.html").read_text()
    parsed = _Page(html)
    clean = f"notebooks/{Path(page).name}.ipynb"
    colab = [h for h in parsed.hrefs if h.startswith("https://colab.research.google.com/")]
    binder = [h for h in parsed.hrefs if h.startswith("https://mybinder.org/")]
    assert colab and binder, f"{page}: no Colab/Binder launch button"
    for href in colab + binder:  # not the executed copy with papermill's pinned parameters
        assert clean in href and "book/" not in href, href
    text = "".join(parsed.text)
    assert "NBVAL_IGNORE_OUTPUT" not in html and "nbval" not in text.lower()  # the tag is only a CSS class
    assert "# Parameters" not in text  # papermill's injected-parameters cell
    assert "On Colab or a fresh cloud kernel" not in text  # the install cell
    assert 'preset = "' not in text and '"preset": "' not in text  # the parameters cell
    # the chapters' markdown_table outputs render as tables, not as pipe text (plain CommonMark has no tables;
    # its typographer turns the rule row's --- into an em dash)
    assert "|---|" not in text and "|—|" not in text, f"{page}: a markdown table rendered as text"


@pytest.mark.book_build
def test_every_figure_in_the_built_book_says_what_it_shows_not_where_its_file_is(built_book):
    figures_seen = 0
    for path in sorted(built_book.glob("book/**/*.html")):
        for src, alt in _Page(path.read_text()).images:
            assert not figures.is_path(alt) and Path(src).name not in alt, f"{path.name}: <img src={src}> alt={alt!r}"
            figures_seen += "_images/" in src
    # every chapter figure of every page, and the results page's (a figure with no text stops the build instead)
    expected = sum(len(figures.figure_cells(json.loads(p.read_text())))
                   for p in (ROOT / "book").glob("**/[0-9][0-9]_*.ipynb"))
    assert figures_seen >= expected > 0


@pytest.mark.book_build
@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_a_chapter_pages_title_names_its_run_so_next_and_previous_never_read_as_the_same_page(built_book, page):
    backend, stack, _ = book.page_run(page)
    parsed = _Page((built_book / f"{page}.html").read_text())
    own = parsed.title.split(" \u2014 ")[0]  # "<page title> — <book title>"
    assert own.endswith(f" ({backend.upper()}, {stack} stack)"), own
    assert parsed.rel, f"{page}: no previous/next links"
    for side, (href, title) in parsed.rel.items():
        target = _Page(((built_book / page).parent / href).resolve().read_text()).title.split(" \u2014 ")[0]
        assert title == target and title != own, f"{page}: {side} reads {title!r}, this page is {own!r}"


@pytest.mark.parametrize("notebook", sorted(p.relative_to(ROOT).as_posix() for p in
                                            [*(ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"),
                                             *(ROOT / "book").glob("**/[0-9][0-9]_*.ipynb")]))
def test_every_figure_cell_of_a_chapter_has_alt_text_for_the_build(notebook):
    nb = json.loads((ROOT / notebook).read_text())
    stem = Path(notebook).stem
    for index, cell_id, first in figures.figure_cells(nb):
        given = nb["cells"][index].get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")
        assert figures.alt_text(stem, cell_id) or given, (
            f"{notebook}: the figure of cell {cell_id!r} ({first!r}) has no alt text in vitlab/book/figures.py")


def test_the_alt_table_names_only_figure_cells_that_exist():
    drawn = {(p.stem, cell_id) for p in [*(ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"),
                                         *(ROOT / "book").glob("**/[0-9][0-9]_*.ipynb")]
             for _, cell_id, _ in figures.figure_cells(json.loads(p.read_text()))}
    listed = {(chapter, cell_id) for chapter, cells in figures.ALT.items() for cell_id in cells}
    assert listed <= drawn, f"stale entries: {sorted(listed - drawn)}"
    assert all(not figures.is_path(alt) and len(alt) > 40 for cells in figures.ALT.values() for alt in cells.values())


def test_cli_refuses_an_absent_backend_without_touching_the_book():
    from vitlab.device import available_backends
    if "xpu" in available_backends():
        pytest.skip("this machine has an XPU")
    before = {p: p.stat().st_mtime_ns for p in (ROOT / "book").rglob("*")}
    result = subprocess.run([sys.executable, "-m", "vitlab.cli", "run", "--backend", "xpu"], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"vitlab run: backend 'xpu' is not available on this machine (available: {', '.join(available_backends())})"]
    assert {p: p.stat().st_mtime_ns for p in (ROOT / "book").rglob("*")} == before


def test_speedups_compare_with_the_baseline_row_of_the_same_group():
    base = {"backend": "cpu", "notebook": "n", "model": "m", "batch": 1, "run_id": "a", "time": "1"}
    rows = [{**base, "variant": "eager", "throughput": 10.0, "baseline": True},
            {**base, "variant": "compiled", "throughput": 25.0},
            {**base, "variant": "eager", "throughput": 1.0, "baseline": True, "run_id": "old", "time": "0"}]
    latest = results.with_speedups(results.latest_runs(rows))
    assert {r["variant"]: r["speedup"] for r in latest} == {"eager": 1.0, "compiled": 2.5}
    # groups and sweeps are separate comparisons, whatever the variants are called
    grouped = [{**base, "variant": "eager", "group": "bf16", "throughput": 20.0, "baseline": True},
               {**base, "variant": "default", "group": "bf16", "throughput": 30.0},
               {**base, "variant": "eager", "group": "fp32", "throughput": 8.0, "baseline": True},
               {**base, "variant": "eager", "sweep": True, "throughput": 4.0, "baseline": True},
               {**base, "variant": "default", "sweep": True, "throughput": 6.0},
               {**base, "variant": "orphan", "group": "int8", "throughput": 5.0}]
    assert [r["speedup"] for r in results.with_speedups(grouped)] == [1.0, 1.5, 1.0, 1.0, 1.5, None]
    assert results.baseline_problems(grouped) == ["('cpu', 'n', 'm', 1, 'int8', False): 0 baseline rows"]


def _row(torch_version, variant, throughput, model="m", preset="quick", run_id="r"):
    return {"backend": "cpu", "notebook": "n", "model": model, "batch": 8, "variant": variant, "preset": preset,
            "throughput": throughput, "run_id": run_id, "time": "1", "versions": {"torch": torch_version},
            "baseline": variant == "eager"}


def test_a_gpu_run_on_the_current_stack_stands_beside_the_cpu_and_is_compared_only_with_itself(tmp_path):
    cpu = [_row("2.8.0", "eager", 10.0), _row("2.8.0", "compiled", 20.0)]
    gpu = [{**_row("2.11.0", variant, rate, preset="gpu"), "backend": "cuda", "device_name": "NVIDIA H200"}
           for variant, rate in (("eager", 100.0), ("compiled", 300.0))]
    page = report.write_results_page(cpu, tmp_path, gpu).read_text()
    assert "| cuda (current stack) | n | gpu | NVIDIA H200 |" in page
    assert "| cuda (current stack) | m | compiled | 8 | – | – | 300.00 | throughput | 3.00× from 0 rounds" in page
    assert "| cpu | m | compiled | 8 | – | – | 20.00 | throughput | 2.00× from 0 rounds" in page  # the CPU's eager
    assert "- **cuda** — ran on the current stack only" in page and "--backend cuda --preset gpu" in page


def test_the_toc_names_a_gpu_page_by_its_device_next_to_the_cpu_pages(tmp_path):
    import nbformat
    chapter = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A chapter")])
    for folder in ("notebooks", "book/cpu", "book/current/cuda"):
        (tmp_path / folder).mkdir(parents=True)
        nbformat.write(chapter, tmp_path / folder / "01_a.ipynb")
    rows = layout.rows_file("cuda", "current", tmp_path / "book")
    rows.parent.mkdir(parents=True)
    rows.write_text(json.dumps({"backend": "cuda", "device_name": "NVIDIA H200"}) + "\n")
    entry = book.toc(tmp_path)["parts"][0]["chapters"][0]
    assert entry["title"] == "A chapter (CPU, reference stack)"
    assert entry["sections"] == [{"file": "book/current/cuda/01_a", "title": "… on CUDA (H200), current stack"}]


def test_a_page_loses_papermills_parameters_cell_and_outputs_that_printed_only_whitespace(tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    injected = nbformat.v4.new_code_cell("backend = 'cpu'", metadata={"tags": ["injected-parameters"]})
    printed = nbformat.v4.new_code_cell("run()")
    printed.outputs = [nbformat.v4.new_output("stream", name="stdout", text="\n"),
                       nbformat.v4.new_output("stream", name="stdout", text="kept\n"),
                       nbformat.v4.new_output("stream", name="stderr", text="\n")]
    nb.cells = [injected, printed]
    path = tmp_path / "page.ipynb"
    nbformat.write(nb, path)
    book.hide_injected_parameters(path)
    page = nbformat.read(path, as_version=4)
    assert "remove-cell" in page.cells[0].metadata["tags"]
    assert [(o.name, o.text) for o in page.cells[1].outputs] == [("stdout", "kept\n"), ("stderr", "\n")]


def test_the_findings_box_wraps_long_op_names_instead_of_running_past_its_edge(built_book):
    # an error line names ATen ops of 60+ characters with no space; book/_static/vitlab.css breaks them anywhere
    page = (built_book / "book" / "cpu" / "01_port_to_xpu.html").read_text()
    assert '_static/vitlab.css' in page
    css = (built_book / "_static" / "vitlab.css").read_text()
    assert re.search(r"\.admonition p[^{]*\{[^}]*overflow-wrap:\s*anywhere", css)
