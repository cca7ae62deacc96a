"""A notebook as one standalone HTML page: code and prompts hidden, images embedded, nothing
fetched. A Content-Security-Policy forbids the browser any fetch or script; tags that point at
the network are removed too, for viewers that ignore the policy.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import nbformat

# The lab template minus everything it would fetch: require.js, MathJax, mermaid, widgets.
# The Content-Security-Policy is the real guarantee (a browser fetches nothing, runs no script);
# it comes right after <title>, before any style, so it governs everything that follows.
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:"
_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{% block html_head_js %}<meta http-equiv="Content-Security-Policy" content="@CSP@">
{% endblock html_head_js %}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block html_head_js_mathjax %}{% endblock html_head_js_mathjax %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
""".replace("@CSP@", _CSP)
# Outputs may still carry their own remote scripts (plotly and the like): dropped too, a second
# line of defence for viewers that ignore the policy (some mail clients, old browsers).
_REMOTE_TAG = re.compile(
    r"<script\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>.*?</script\s*>"
    r"|<link\b[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>",
    re.I | re.S,
)
_BODY_START = re.compile(r"<body\b[^>]*>", re.I)
_REMOTE_IMG_SRC = re.compile(
    r"(<img\b[^>]*?)\bsrc\s*=\s*[\"']?(?:https?:)?//[^\s\"'>]*[\"']?", re.I
)


def export_html(nb: Any, path: Path, *, title: str, base: Path, banner: str | None = None) -> Path:
    """Input and prompts hidden, images embedded (markdown ones relative to ``base``), nothing
    to fetch; ``<title>`` is ``title``; ``banner``, when given, is the page's first line."""
    from jinja2 import DictLoader
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name="lab",
        template_file="workbench-report.html.j2",
        extra_loaders=[DictLoader({"workbench-report.html.j2": _TEMPLATE})],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    nb = nbformat.from_dict(nb)  # a copy: the title is for the HTML only
    nb.metadata["title"] = title
    body, _ = exporter.from_notebook_node(
        nb, resources={"metadata": {"name": title, "path": str(base)}}
    )
    body = _REMOTE_IMG_SRC.sub(r"\1", _REMOTE_TAG.sub("", body))
    if banner:
        line = (
            '<p class="wb-banner" role="note" data-banner="sandbox" style="background:#fff3cd;'
            'border:1px solid #c69500;padding:.5em 1em;font-weight:bold;margin:0 0 1em">'
            f"{html.escape(banner)}</p>"
        )
        body = _BODY_START.sub(lambda m: m.group(0) + line, body, count=1)
    path.write_text(body, encoding="utf-8")
    return path
