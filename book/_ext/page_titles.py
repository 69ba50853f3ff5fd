"""Each executed chapter's page says in its title which run it shows: '… (CPU, reference stack)'.

A chapter has one page per run (book/[current/]<backend>/NN_name), all built from the same notebook, so they share
its `# heading`. Sphinx takes a page's title from that heading for the previous/next links, the browser tab and the
search results; with nothing else told apart, the reference page's "next" link named the chapter just read while it
led to the current stack's copy. This appends the run, as the table of contents names it (vitlab.book.runner's
run_label), to the heading of every chapter page before Sphinx records the title.
"""
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform

from vitlab.book.runner import page_run, run_label


class RunInTitle(SphinxTransform):
    default_priority = 400  # before Sphinx's doctree-read (880), where the title collector records the title

    def apply(self, **kwargs) -> None:
        run = page_run(self.env.docname)
        section = self.document.next_node(nodes.section) if run else None
        if section is None or not isinstance(section[0], nodes.title):
            return
        backend, stack, _ = run
        section[0] += nodes.Text(f" ({run_label(backend, stack, Path(self.app.srcdir))})")


def setup(app):
    app.add_transform(RunInTitle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
