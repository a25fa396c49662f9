"""Escaping by construction: plain strings never reach a page unescaped."""

from __future__ import annotations

from resolver.ui.markup import Markup, escape, join, link, tag, url, void


def test_text_and_attributes_are_escaped() -> None:
    built = tag("td", "<b>&", title='"><script>', class_="x")
    assert built == '<td title="&quot;&gt;&lt;script&gt;" class="x">&lt;b&gt;&amp;</td>'


def test_markup_passes_through_once() -> None:
    inner = tag("b", "<i>")
    outer = tag("p", inner, " & ", [1, None, "<"])
    assert outer == "<p><b>&lt;i&gt;</b> &amp; 1&lt;</p>"
    assert escape(Markup("<br>")) == "<br>"


def test_void_links_and_urls() -> None:
    assert (
        void("input", name="token", required=True, hidden=False) == '<input name="token" required>'
    )
    assert link("/ui?a=1&b=2", "go") == '<a href="/ui?a=1&amp;b=2">go</a>'
    assert url("/ui/x", branch="root/b0", after=None) == "/ui/x?branch=root%2Fb0"
    assert join(["<a>", tag("b", "c")], ", ") == "&lt;a&gt;, <b>c</b>"
