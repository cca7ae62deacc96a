"""``python -m workbench.config``: write ``docs/configuration.md``."""

from workbench.config.settings import DOCS_PATH, render

DOCS_PATH.write_text(render(), encoding="utf-8")
print(DOCS_PATH)
