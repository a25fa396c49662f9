"""HTML building with escaping by default, for pages that show recorded third-party content.

Everything a tape holds (URLs, headers, bodies, even branch names typed by users) is untrusted;
one forgotten `html.escape` in an f-string would let a recorded page run script in the viewer's
browser. Here a plain `str` is always escaped and only `Markup` built by these helpers passes
through, so forgetting is not possible by construction.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from urllib.parse import quote, urlencode


class Markup(str):
    """A string that is already safe HTML."""

    __slots__ = ()


def escape(value: object) -> Markup:
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    if isinstance(value, str):
        return Markup(html.escape(value, quote=True))
    if isinstance(value, Iterable):
        return Markup("".join(escape(item) for item in value))
    return Markup(html.escape(str(value), quote=True))


def tag(name: str, /, *children: object, **attributes: object) -> Markup:
    """`<name attr="…">children</name>`; `class_` becomes `class`, None/False attributes drop."""
    parts = [name]
    for key, value in attributes.items():
        if value is None or value is False:
            continue
        attribute = key.rstrip("_").replace("_", "-")
        parts.append(attribute if value is True else f'{attribute}="{escape(str(value))}"')
    return Markup(f"<{' '.join(parts)}>{escape(children)}</{name}>")


def void(name: str, /, **attributes: object) -> Markup:
    """A void element (`<meta>`, `<input>`, `<link>`) with escaped attributes."""
    return Markup(tag(name, **attributes).removesuffix(f"</{name}>"))


def join(items: Iterable[object], separator: str = "") -> Markup:
    return Markup(escape(separator).join(escape(item) for item in items))


def path_segment(value: str) -> str:
    return quote(value, safe="")


def url(path: str, **params: object) -> str:
    """A same-site URL with query parameters encoded (None values dropped)."""
    given = {key: value for key, value in params.items() if value is not None}
    return f"{path}?{urlencode(given)}" if given else path


def link(href: str, /, *children: object, **attributes: object) -> Markup:
    return tag("a", *children, href=href, **attributes)


def table(
    headings: Iterable[str], rows: Iterable[Iterable[object]], **attributes: object
) -> Markup:
    head = tag("thead", tag("tr", [tag("th", heading) for heading in headings]))
    body = tag("tbody", [tag("tr", [tag("td", cell) for cell in row]) for row in rows])
    return tag("table", head, body, **attributes)


def svg(
    title: str, shapes: Iterable[object], *, width: int, height: int, **attributes: object
) -> Markup:
    """An inline SVG image (no script, nothing fetched) with an accessible title."""
    return tag(
        "svg",
        tag("title", title),
        *shapes,
        xmlns="http://www.w3.org/2000/svg",
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        font_size="12",
        font_family="system-ui, sans-serif",
        **attributes,
    )
