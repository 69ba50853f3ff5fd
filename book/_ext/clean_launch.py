"""Launch buttons (Colab, Binder, JupyterHub) open the clean chapter, not the page's executed copy.

A chapter page is built from papermill's executed copy, book/[current/]<backend>/NN_name.ipynb, which
carries the injected `# Parameters` cell of that run (backend, preset). sphinx-book-theme points its
launch buttons at the page's own source; a reader who opens one should get notebooks/NN_name.ipynb,
the notebook without that run's pins. The "download .ipynb" and repository buttons are left alone:
they are meant to give the page as shown, outputs included.
"""
import re
from pathlib import Path

CHAPTER = re.compile(r"book/(?:.+/)?(\d\d_[^/]+)")  # pagename of an executed copy, whatever stack or backend


def clean_launch_urls(app, pagename, templatename, context, doctree):
    match = CHAPTER.fullmatch(pagename)
    if match is None or not (Path(app.srcdir) / "notebooks" / f"{match[1]}.ipynb").exists():
        return
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group.get("buttons", []):
            if "url" in button:  # the theme puts "<path_to_docs>/<pagename>.ipynb" into every launch URL
                button["url"] = button["url"].replace(f"{pagename}.ipynb", f"notebooks/{match[1]}.ipynb")


def setup(app):
    # sphinx-book-theme adds its launch buttons at priority 501; run after it, before the page is rendered.
    app.connect("html-page-context", clean_launch_urls, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
