"""The page shell and the small pieces every viewer page shares (badges, legend, errors).

Keeping the shell in one place means every page links the same stylesheet, carries the same
navigation and content-security policy, and answers errors as HTML a person can read.
"""

from __future__ import annotations

from collections.abc import Iterable

from fastapi.responses import HTMLResponse

from resolver.ui.assets import DECISION_COLOURS, decision_class
from resolver.ui.markup import Markup, link, tag, void

# Nothing on a viewer page may load from elsewhere or run inline script: recorded content is
# third-party, and escaping is the first line of defence, this header the second.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

UI_ROOT = "/ui"


def page(
    title: str,
    *content: object,
    crumbs: Iterable[tuple[str, str]] = (),
    status_code: int = 200,
) -> HTMLResponse:
    trail = [link(href, label) for href, label in crumbs]
    document = Markup("<!DOCTYPE html>") + tag(
        "html",
        tag(
            "head",
            void("meta", charset="utf-8"),
            void("meta", name="viewport", content="width=device-width, initial-scale=1"),
            tag("title", f"{title} · Groundhog"),
            void("link", rel="stylesheet", href=f"{UI_ROOT}/style.css"),
        ),
        tag(
            "body",
            tag("header", link(UI_ROOT, "Groundhog"), tag("nav", trail)),
            tag("main", tag("h1", title), *content),
        ),
        lang="en",
    )
    return HTMLResponse(document, status_code=status_code, headers=SECURITY_HEADERS)


def badge(decision: str) -> Markup:
    return tag(
        "span",
        decision,
        class_=f"badge decision {decision_class(decision)}",
        data_decision=decision,
    )


def legend() -> Markup:
    return tag("p", [badge(decision) for decision in DECISION_COLOURS], class_="legend")


def error_page(status: int, title: str, detail: str) -> HTMLResponse:
    return page(
        title,
        tag("p", detail, class_="error"),
        tag("p", link(UI_ROOT, "Back to the list of tapes")),
        status_code=status,
    )


def short(value: str, length: int = 12) -> str:
    """A hash shortened for a table cell (the full value stays in the title attribute)."""
    return value if len(value) <= length else value[:length] + "…"


def hash_cell(value: str) -> Markup:
    if not value:
        return tag("span", "(empty)", class_="muted")
    return tag("code", short(value), title=value)
