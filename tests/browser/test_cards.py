"""The headline's cards in Chromium, at a narrow width: a long ResponseStatus wraps where a
word of it starts, never inside one ("TranscriptRequestReceiv|ed")."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import chromium
from tests.report.test_sections import responded
from workbench.report import headline_section

pytestmark = pytest.mark.slow

# Each line break inside a card's text: the text just before it and just after it, read from
# the rectangles of its characters (a <wbr> splits a text node: a break there is between nodes).
BREAKS = """() => {
  const found = [];
  for (const card of document.querySelectorAll('.wb-figure')) {
    const walker = document.createTreeWalker(card, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = document.createRange();
      let top = null;
      for (let i = 0; i < node.length; i++) {
        range.setStart(node, i); range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        if (top !== null && rect.top > top + 2) {
          found.push([node.data.slice(Math.max(0, i - 12), i), node.data.slice(i, i + 12)]);
        }
        top = rect.top;
      }
    }
  }
  return found;
}"""
WRAPPED = """() => Array.from(document.querySelectorAll('[data-figure^="responses_"]')).map(
  e => e.getClientRects().length)"""


def test_cards_never_break_a_word(chromium_path: str, tmp_path: Path, artifacts: Path) -> None:
    page_file = tmp_path / "cards.html"
    rec = responded("TranscriptRequestReceived", "OfflineRecordSearch", "Hold")
    page_file.write_text(f"<html><body>{headline_section(rec).data}</body></html>")
    with chromium(chromium_path) as browser:
        page = browser.new_page(viewport={"width": 420, "height": 1600})
        page.goto(page_file.as_uri(), wait_until="load")
        breaks = page.evaluate(BREAKS)
        lines = page.evaluate(WRAPPED)
        page.screenshot(path=str(artifacts / "cards.png"), full_page=True)
    assert max(lines) > 1  # the long statuses do wrap at this width
    mid_word = [(before, after) for before, after in breaks
                if before[-1:].isalnum() and after[:1].isalnum()]  # fmt: skip
    assert mid_word == []
