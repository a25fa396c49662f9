"""Unit tests of resolver/ui/routing.py: the login page and `HtmlRoute`'s error pages.

The viewer's own tests reach these through the real pages (a missing tape's 404, a closed
viewer's login form); here a bare FastAPI app with one `HtmlRoute` router raises each kind of
error the route class handles — from the handler and from a dependency — so each answer is
checked on its own: an HTML page with the error's status, title and (escaped) detail, the login
form for `LoginRequired`, and any other error left to propagate.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

import pytest
from fastapi import APIRouter, Depends, FastAPI, Query, Response
from fastapi.responses import HTMLResponse
from fastapi.testclient import TestClient

from engine.errors import ProblemError
from resolver.errors import Conflict, NotFound
from resolver.ui.access import LoginRequired
from resolver.ui.layout import SECURITY_HEADERS, UI_ROOT, page
from resolver.ui.routing import HtmlRoute, login_page

HOSTILE = "<script>alert('x')</script>"


class Gone(ProblemError):
    status, slug, title = 410, "gone", "Gone away"


def closed() -> None:
    raise LoginRequired("the viewer needs a login")


def make_app() -> FastAPI:
    router = APIRouter(route_class=HtmlRoute)

    @router.get("/fine", response_class=HTMLResponse)
    def fine() -> HTMLResponse:
        return page("Fine", "all well")

    @router.get("/missing", response_class=HTMLResponse)
    def missing() -> HTMLResponse:
        raise NotFound(f"tape {HOSTILE!r} does not exist")

    @router.get("/conflict", response_class=HTMLResponse)
    def conflict() -> HTMLResponse:
        raise Conflict("the branch is leased")

    @router.get("/engine", response_class=HTMLResponse)
    def engine() -> HTMLResponse:
        raise Gone("the engine refused it")

    @router.get("/login-needed", response_class=HTMLResponse)
    def login_needed() -> HTMLResponse:
        raise LoginRequired("the viewer needs a login")

    @router.get("/guarded", response_class=HTMLResponse, dependencies=[Depends(closed)])
    def guarded() -> HTMLResponse:
        return page("Guarded", "never shown")

    @router.get("/numbers", response_class=HTMLResponse)
    def numbers(n: int = Query(), m: int = Query(ge=0)) -> HTMLResponse:
        return page("Numbers", f"{n} {m}")

    @router.get("/broken", response_class=HTMLResponse)
    def broken() -> HTMLResponse:
        raise RuntimeError("a bug, not an error to render")

    app = FastAPI()
    app.include_router(router)
    return app


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(make_app()) as opened:
        yield opened


def body_text(response: Response) -> str:
    return bytes(response.body).decode()


def main_text(text: str) -> str:
    return text[text.index("<main>") :]


def error_paragraph(text: str) -> str:
    found = re.search(r'<p class="error">(.*?)</p>', text, flags=re.S)
    assert found, text
    return html.unescape(found.group(1))


def test_a_route_that_succeeds_is_answered_as_it_returned(client: TestClient) -> None:
    answer = client.get("/fine")
    assert answer.status_code == 200 and "<h1>Fine</h1>" in answer.text
    assert "all well" in answer.text


@pytest.mark.parametrize(
    ("path", "status", "title", "detail"),
    [
        ("/missing", 404, "Not found", f"tape {HOSTILE!r} does not exist"),
        ("/conflict", 409, "Conflict", "the branch is leased"),
        ("/engine", 410, "Gone away", "the engine refused it"),
    ],
)
def test_typed_errors_become_html_pages_with_their_status(
    client: TestClient, path: str, status: int, title: str, detail: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("text/html")  # not problem+json
    assert f"<h1>{title}</h1>" in answer.text
    assert error_paragraph(answer.text) == detail
    assert f'href="{UI_ROOT}"' in main_text(answer.text)  # a way back to the list of tapes
    for name, value in SECURITY_HEADERS.items():
        assert answer.headers[name] == value


def test_an_error_detail_is_shown_as_text_never_run(client: TestClient) -> None:
    answer = client.get("/missing")
    assert HOSTILE not in answer.text and html.escape(HOSTILE) in answer.text


@pytest.mark.parametrize("path", ["/login-needed", "/guarded"])
def test_login_required_from_handler_or_dependency_answers_the_login_form(
    client: TestClient, path: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == 401
    assert answer.text == body_text(login_page())
    assert "never shown" not in answer.text


def test_invalid_input_names_each_field_and_why(client: TestClient) -> None:
    answer = client.get("/numbers", params={"n": "abc", "m": "-1"})
    assert answer.status_code == 422 and "<h1>Invalid input</h1>" in answer.text
    detail = error_paragraph(answer.text)
    parts = dict(part.split(": ", 1) for part in detail.split("; "))
    assert set(parts) == {"query.n", "query.m"}
    assert "integer" in parts["query.n"] and "0" in parts["query.m"]
    assert client.get("/numbers", params={"n": "3", "m": "4"}).status_code == 200


def test_other_errors_are_not_turned_into_pages(client: TestClient) -> None:
    with pytest.raises(RuntimeError, match="a bug"):
        client.get("/broken")


def form_of(text: str) -> str:
    found = re.search(r"<form[^>]*>.*?</form>", text, flags=re.S)
    assert found, text
    return found.group(0)


def message_of(text: str) -> tuple[str, str]:
    found = re.search(r'<p class="(error|note)">(.*?)</p>', main_text(text), flags=re.S)
    assert found, text
    return found.group(1), html.unescape(found.group(2))


def test_the_login_page_posts_a_password_to_the_login_route() -> None:
    answer = login_page()
    text = body_text(answer)
    assert answer.status_code == 401
    form = form_of(text)
    assert 'method="post"' in form and f'action="{UI_ROOT}/login"' in form
    assert re.search(r'<input[^>]*type="password"[^>]*name="token"', form)
    kind, message = message_of(text)
    assert kind == "note" and "GROUNDHOG_ADMIN_TOKEN" in message
    assert answer.headers["content-security-policy"] == SECURITY_HEADERS["Content-Security-Policy"]


def test_the_login_page_says_a_wrong_token_did_not_match() -> None:
    answer = login_page(failed=True)
    assert answer.status_code == 401
    kind, message = message_of(body_text(answer))
    assert kind == "error" and "does not match" in message
    assert message != message_of(body_text(login_page()))[1]


def test_a_throttled_login_names_the_wait_over_any_other_message() -> None:
    answer = login_page(status_code=429, failed=True, throttled=17)
    assert answer.status_code == 429
    kind, message = message_of(body_text(answer))
    assert kind == "error" and "17 s" in message and "does not match" not in message
    assert form_of(body_text(answer))  # the form is still there to try again
    assert login_page(status_code=200).status_code == 200
