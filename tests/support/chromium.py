"""Headless Chromium for the tests that check what a person sees (the viewer, `/docs`).

One place launches Debian's chromium through playwright with the flags a sandboxed CI needs, and
records every request to a host other than loopback (and aborts it): a page that renders only
because it fetched something from the internet is a page that is blank offline.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.support.servers import LOOPBACK

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium: apt-get install -y chromium "
    "(.ci/system-deps installs it)",
)


@contextmanager
def loopback_page(viewport: dict[str, int] | None = None) -> Iterator[Any]:
    """A page whose `foreign_requests` and `console_errors` lists fill as it is used."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=viewport or {"width": 1200, "height": 900})
            page.foreign_requests = []
            page.console_errors = []

            def only_loopback(route: Any) -> None:
                if urlsplit(route.request.url).hostname == LOOPBACK:
                    route.continue_()
                else:
                    page.foreign_requests.append(route.request.url)
                    route.abort()

            page.route("**/*", only_loopback)
            page.on(
                "console",
                lambda message: (
                    message.type == "error" and page.console_errors.append(message.text)
                ),
            )
            yield page
        finally:
            browser.close()
