"""Chapter figures get alt text that says what they show (vitlab/book/figures.py), not their file path.

myst-nb renders a notebook's image output as an image node with no alt text (unless the cell's metadata sets
`mystnb: {image: {alt: ...}}`), and docutils then writes the image's path as its alt. At build time, this fills in
the text listed for the figure's chapter and cell id, on every page built from that chapter (the clean notebook's
executed copies under book/[current/]<backend>/ share its cell ids). A figure with neither is a warning, which the
strict build (`vitlab book`) turns into an error that names the chapter and cell to add.
"""
import hashlib
import json
from pathlib import Path

from docutils import nodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

from vitlab.book.figures import ALT, alt_text, is_path

logger = logging.getLogger(__name__)


class FigureAlt(SphinxTransform):
    default_priority = 400

    def apply(self, **kwargs) -> None:
        path = Path(self.env.doc2path(self.env.docname))
        if path.suffix != ".ipynb":
            return
        cells = None
        for cell in self.document.findall(nodes.container):
            if cell.get("nb_element") != "cell_code" or cell.get("cell_index") is None:
                continue
            images = [image for image in cell.findall(nodes.image) if is_path(image.get("alt"))]
            if not images:
                continue
            if cells is None:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            cell_id = cells[cell["cell_index"]].get("id")
            alt = alt_text(path.stem, cell_id)
            for image in images:
                if alt:
                    image["alt"] = alt
                else:
                    logger.warning(f"figure without alt text: {path.stem}, cell id {cell_id!r}: add what it shows "
                                   "to vitlab/book/figures.py's ALT (or set the cell's mystnb.image.alt metadata)",
                                   location=image, type="vitlab", subtype="figure_alt")


def setup(app):
    app.add_transform(FigureAlt)
    # The table is not a source file: a config value that changes with it makes Sphinx read every page again.
    table = hashlib.sha256(json.dumps(ALT, sort_keys=True).encode()).hexdigest()[:16]
    app.add_config_value("vitlab_figure_alt_table", table, "env", types=[str])
    return {"parallel_read_safe": True, "parallel_write_safe": True}
